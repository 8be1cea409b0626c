package bench

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Plot geometry, in SVG user units.
const (
	svgWidth   = 900
	svgHeight  = 560
	plotLeft   = 80
	plotRight  = 150 // room for the legend
	latTop     = 50
	latBottom  = 300
	rateTop    = 360
	rateBottom = 510
)

// series is one line of a plot.
type series struct {
	label string
	color string
	y     []float64
}

// WriteSVG draws r's timeline as a standalone SVG image: latency (p50, p90
// and p99 per second, in ms) above, throughput (ops/s) below, seconds
// along the bottom.
func WriteSVG(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	n := len(r.Timeline)
	pick := func(f func(Second) float64) []float64 {
		out := make([]float64, n)
		for i, s := range r.Timeline {
			out[i] = f(s)
		}
		return out
	}
	lat := []series{
		{"p50", "#1f77b4", pick(func(s Second) float64 { return s.Latency.At(50) })},
		{"p90", "#2ca02c", pick(func(s Second) float64 { return s.Latency.At(90) })},
		{"p99", "#d62728", pick(func(s Second) float64 { return s.Latency.At(99) })},
	}
	rate := []series{
		{"ops/s", "#9467bd", pick(func(s Second) float64 { return s.OpsPerS })},
		{"errors/s", "#ff7f0e", pick(func(s Second) float64 { return float64(s.Errors) })},
	}

	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	clients := "clients"
	if r.Workers == 1 {
		clients = "client"
	}
	title := fmt.Sprintf("%s: %d %s, %.0f ops/s, p99 %.2f ms", r.Workload, r.Workers, clients, r.OpsPerS, r.Latency.At(99))
	fmt.Fprintf(bw, `<text x="%d" y="25" font-size="15" font-weight="bold">%s</text>`+"\n", plotLeft, html.EscapeString(title))
	panel(bw, lat, n, latTop, latBottom, "latency (ms)", false)
	panel(bw, rate, n, rateTop, rateBottom, "operations per second", true)
	fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">seconds</text>`+"\n", (plotLeft+svgWidth-plotRight)/2, svgHeight-12)
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}

// panel draws one chart of ss between the heights top and bottom, with an
// x axis of n seconds (labelled only when xLabels is set).
func panel(w io.Writer, ss []series, n, top, bottom int, yLabel string, xLabels bool) {
	right := svgWidth - plotRight
	ymax := 0.0
	for _, s := range ss {
		for _, v := range s.y {
			ymax = math.Max(ymax, v)
		}
	}
	x := func(i int) float64 {
		if n <= 1 {
			return float64(plotLeft+right) / 2
		}
		return plotLeft + float64(i)*float64(right-plotLeft)/float64(n-1)
	}
	y := yAxis(w, ymax, plotLeft, right, top, bottom, yLabel)
	// X axis ticks: about ten, at whole seconds.
	xstep := max(1, int(niceStep(float64(n)/10)))
	for i := 0; i < n; i += xstep {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`+"\n", x(i), bottom, x(i), bottom+4)
		if xLabels {
			fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(i), bottom+18, i+1)
		}
	}
	panelBorder(w, plotLeft, right, top, bottom)

	// Lines, with dots so a one-second run still shows.
	for k, s := range ss {
		var pts strings.Builder
		for i, v := range s.y {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(i), y(v))
		}
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", s.color, strings.TrimSpace(pts.String()))
		if n <= 60 {
			for i, v := range s.y {
				fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>`+"\n", x(i), y(v), s.color)
			}
		}
		legendEntry(w, right, top, k, s.color, s.label)
	}
}

// yAxis draws a panel's y axis between the heights top and bottom, from
// left to right: a grid line and a label at each of about five round
// steps up to at least ymax, and the axis label. It returns the panel's
// y scale.
func yAxis(w io.Writer, ymax float64, left, right, top, bottom int, label string) func(float64) float64 {
	step := niceStep(ymax / 5)
	ymax = math.Max(step, math.Ceil(ymax/step)*step)
	y := func(v float64) float64 { return float64(bottom) - v/ymax*float64(bottom-top) }
	for v := 0.0; v <= ymax*1.0001; v += step {
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, y(v), right, y(v))
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, y(v), fmtTick(v))
	}
	fmt.Fprintf(w, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (top+bottom)/2, html.EscapeString(label))
	return y
}

// panelBorder draws a panel's border.
func panelBorder(w io.Writer, left, right, top, bottom int) {
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, top, right-left, bottom-top)
}

// legendEntry draws the k-th line's legend entry right of a panel whose
// plot area ends at right.
func legendEntry(w io.Writer, right, top, k int, color, label string) {
	ly := top + 12 + 18*k
	fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", right+15, ly, right+35, ly, color)
	fmt.Fprintf(w, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", right+40, ly, html.EscapeString(label))
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten (at least a
// tiny positive number, so axes never divide by zero).
func niceStep(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// fmtTick prints an axis value compactly.
func fmtTick(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%g", math.Round(v*1000)/1000)
	}
}

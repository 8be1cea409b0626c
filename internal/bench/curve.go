package bench

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// Point is one measurement of a curve: Y measured at parameter X.
type Point struct {
	X, Y float64
}

// Line is one series of a curve panel: its label in the legend and its
// points, drawn in order of X.
type Line struct {
	Label  string
	Points []Point
}

// Panel is one chart of a curve plot: a y axis (always from 0) and the
// lines drawn on it.
type Panel struct {
	YLabel string
	Lines  []Line
}

// CurvePlot is a plot of how figures change with a parameter (clients,
// nodes, value size...): one or more panels stacked, sharing the x axis.
type CurvePlot struct {
	Title  string
	XLabel string
	// LogX spaces x logarithmically: for geometric sweeps (1, 4, 16...).
	// Every x must then be positive.
	LogX bool
	// XTick labels an x tick; nil prints the value compactly.
	XTick func(x float64) string
	// Panels are drawn top to bottom.
	Panels []Panel
}

// Curve plot geometry, in SVG user units.
const (
	curveWidth       = 820
	curveLeft        = 80
	curveRight       = 150 // room for the legend
	curveTitleHeight = 40
	curvePanelHeight = 200
	curvePanelGap    = 30
	curveAxisHeight  = 45 // x tick labels and the x axis label
)

// curveColors are the lines' colours, in turn.
var curveColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"}

// WriteCurveSVG draws p as a standalone SVG image. Ticks on the x axis
// stand at the x values the lines have; every text is escaped.
func WriteCurveSVG(w io.Writer, p CurvePlot) error {
	if len(p.Panels) == 0 {
		return errors.New("curve plot: no panels")
	}
	xs := curveXs(p.Panels)
	if len(xs) == 0 {
		return errors.New("curve plot: no points")
	}
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) || (p.LogX && x <= 0) {
			return fmt.Errorf("curve plot: x %v cannot be drawn (log x: %v)", x, p.LogX)
		}
	}
	tick := p.XTick
	if tick == nil {
		tick = fmtTick
	}
	height := curveTitleHeight + len(p.Panels)*curvePanelHeight + (len(p.Panels)-1)*curvePanelGap + curveAxisHeight
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		curveWidth, height, curveWidth, height)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%d" y="25" font-size="15" font-weight="bold">%s</text>`+"\n", curveLeft, html.EscapeString(p.Title))
	sx := newXScale(xs, p.LogX)
	top := curveTitleHeight
	for i, pn := range p.Panels {
		bottom := top + curvePanelHeight
		curvePanel(bw, pn, sx, xs, top, bottom, tick, i == len(p.Panels)-1)
		top = bottom + curvePanelGap
	}
	fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (curveLeft+curveWidth-curveRight)/2, height-8, html.EscapeString(p.XLabel))
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}

// curveXs returns every x the panels' lines have, sorted, each once.
func curveXs(ps []Panel) []float64 {
	var xs []float64
	for _, pn := range ps {
		for _, l := range pn.Lines {
			for _, pt := range l.Points {
				xs = append(xs, pt.X)
			}
		}
	}
	slices.Sort(xs)
	return slices.Compact(xs)
}

// xScale maps x values to SVG x coordinates across the plot's width.
type xScale struct {
	lo, hi float64
	log    bool
}

// newXScale spans xs (sorted), logarithmically when log is set.
func newXScale(xs []float64, log bool) xScale {
	s := xScale{lo: xs[0], hi: xs[len(xs)-1], log: log}
	if log {
		s.lo, s.hi = math.Log(s.lo), math.Log(s.hi)
	}
	return s
}

// at returns the SVG x coordinate of x.
func (s xScale) at(x float64) float64 {
	right := float64(curveWidth - curveRight)
	if s.log {
		x = math.Log(x)
	}
	if s.hi == s.lo {
		return (curveLeft + right) / 2
	}
	// A margin of 4% on each side keeps the end points off the frame.
	span := right - curveLeft
	return curveLeft + span*0.04 + (x-s.lo)/(s.hi-s.lo)*span*0.92
}

// curvePanel draws pn between the heights top and bottom: grid, y labels,
// x ticks at xs (labelled when labels is set), lines with dots, legend.
func curvePanel(w io.Writer, pn Panel, sx xScale, xs []float64, top, bottom int, tick func(float64) string, labels bool) {
	right := curveWidth - curveRight
	ymax := 0.0
	for _, l := range pn.Lines {
		for _, pt := range l.Points {
			if !math.IsNaN(pt.Y) && !math.IsInf(pt.Y, 0) {
				ymax = math.Max(ymax, pt.Y)
			}
		}
	}
	y := yAxis(w, ymax, curveLeft, right, top, bottom, pn.YLabel)
	for _, x := range xs {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`+"\n", sx.at(x), bottom, sx.at(x), bottom+4)
		if labels {
			fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", sx.at(x), bottom+18, html.EscapeString(tick(x)))
		}
	}
	panelBorder(w, curveLeft, right, top, bottom)

	for k, l := range pn.Lines {
		color := curveColors[k%len(curveColors)]
		pts := slices.SortedStableFunc(slices.Values(l.Points), func(a, b Point) int { return cmp.Compare(a.X, b.X) })
		var poly strings.Builder
		for _, pt := range pts {
			if math.IsNaN(pt.Y) || math.IsInf(pt.Y, 0) {
				continue // a missing measurement: no dot, the line passes by
			}
			fmt.Fprintf(&poly, "%.1f,%.1f ", sx.at(pt.X), y(pt.Y))
		}
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", color, strings.TrimSpace(poly.String()))
		for _, pt := range pts {
			if math.IsNaN(pt.Y) || math.IsInf(pt.Y, 0) {
				continue
			}
			fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", sx.at(pt.X), y(pt.Y), color)
		}
		legendEntry(w, right, top, k, color, l.Label)
	}
}

// FormatBytes prints a size in bytes as B, KiB, MiB or GiB, for x ticks
// of value-size sweeps: 64 B, 1 KiB, 64 KiB.
func FormatBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB"}
	u := 0
	for u < len(units)-1 && math.Abs(v) >= 1024 {
		v /= 1024
		u++
	}
	return fmt.Sprintf("%g %s", math.Round(v*10)/10, units[u])
}

// FormatCount prints a count compactly for x ticks: 500, 10k, 250k, 1M.
func FormatCount(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%gM", math.Round(v/1e5)/10)
	case a >= 1e3:
		return fmt.Sprintf("%gk", math.Round(v/1e2)/10)
	default:
		return fmt.Sprintf("%g", v)
	}
}

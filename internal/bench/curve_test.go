package bench

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// svgElements parses an SVG document and returns its elements by name,
// failing the test when it is not well-formed XML.
func svgElements(t *testing.T, doc []byte) map[string][]xml.StartElement {
	t.Helper()
	els := map[string][]xml.StartElement{}
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return els
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			els[se.Name.Local] = append(els[se.Name.Local], se)
		}
	}
}

// attr returns the attribute name of e.
func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// polylinePoints parses a polyline's points attribute.
func polylinePoints(t *testing.T, e xml.StartElement) []Point {
	t.Helper()
	var out []Point
	for _, f := range strings.Fields(attr(e, "points")) {
		x, y, ok := strings.Cut(f, ",")
		if !ok {
			t.Fatalf("point %q", f)
		}
		px, err1 := strconv.ParseFloat(x, 64)
		py, err2 := strconv.ParseFloat(y, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("point %q", f)
		}
		out = append(out, Point{px, py})
	}
	return out
}

func TestWriteCurveSVG_PlacesPoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		logX bool
		xs   []float64
	}{
		{"linear", false, []float64{3, 5, 7}},
		{"log", true, []float64{1, 4, 16, 64, 256}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rising := Line{Label: "ops/s"}
			falling := Line{Label: "p99"}
			// Given out of order: the plot sorts by x.
			for i := len(tc.xs) - 1; i >= 0; i-- {
				rising.Points = append(rising.Points, Point{tc.xs[i], float64(100 * (i + 1))})
				falling.Points = append(falling.Points, Point{tc.xs[i], float64(50 - 10*i)})
			}
			var b bytes.Buffer
			err := WriteCurveSVG(&b, CurvePlot{Title: "t", XLabel: "x", LogX: tc.logX,
				Panels: []Panel{{YLabel: "ops/s", Lines: []Line{rising}}, {YLabel: "ms", Lines: []Line{falling}}}})
			if err != nil {
				t.Fatal(err)
			}
			lines := svgElements(t, b.Bytes())["polyline"]
			if len(lines) != 2 {
				t.Fatalf("%d polylines, want 2", len(lines))
			}
			up, down := polylinePoints(t, lines[0]), polylinePoints(t, lines[1])
			if len(up) != len(tc.xs) || len(down) != len(tc.xs) {
				t.Fatalf("points %d and %d, want %d", len(up), len(down), len(tc.xs))
			}
			for i := 1; i < len(up); i++ {
				if up[i].X <= up[i-1].X {
					t.Errorf("x not increasing: %v", up)
				}
				if up[i].Y >= up[i-1].Y { // SVG y grows downwards
					t.Errorf("rising line drawn falling: %v", up)
				}
				if down[i].Y <= down[i-1].Y {
					t.Errorf("falling line drawn rising: %v", down)
				}
			}
			// The second panel is below the first.
			if down[0].Y <= up[0].Y-float64(curvePanelHeight) {
				t.Errorf("panels overlap: %v above %v", down, up)
			}
			gaps := make([]float64, 0, len(up)-1)
			for i := 1; i < len(up); i++ {
				gaps = append(gaps, up[i].X-up[i-1].X)
			}
			// Evenly spaced on the chosen scale: 3, 5, 7 on a linear one,
			// powers of 4 on a log one.
			for _, g := range gaps {
				if math.Abs(g-gaps[0]) > 0.2 {
					t.Errorf("x gaps %v: want even spacing", gaps)
				}
			}
		})
	}
}

func TestWriteCurveSVG_EscapesLabels(t *testing.T) {
	var b bytes.Buffer
	evil := `<script>&"x"</script>`
	err := WriteCurveSVG(&b, CurvePlot{Title: evil, XLabel: evil, XTick: func(float64) string { return evil },
		Panels: []Panel{{YLabel: evil, Lines: []Line{{Label: evil, Points: []Point{{1, 2}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	els := svgElements(t, b.Bytes())
	if _, ok := els["script"]; ok || strings.Contains(b.String(), "<script>") {
		t.Fatalf("a label escaped its text element:\n%s", b.String())
	}
	if n := strings.Count(b.String(), "&lt;script&gt;"); n < 5 {
		t.Errorf("%d escaped labels, want 5 (title, x label, tick, y label, legend)", n)
	}
}

func TestWriteCurveSVG_Errors(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    CurvePlot
	}{
		{"no panels", CurvePlot{}},
		{"no points", CurvePlot{Panels: []Panel{{Lines: []Line{{Label: "a"}}}}}},
		{"zero on a log axis", CurvePlot{LogX: true, Panels: []Panel{{Lines: []Line{{Points: []Point{{0, 1}, {4, 2}}}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := WriteCurveSVG(io.Discard, tc.p); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestWriteCurveSVG_MissingValueLeavesNoDot(t *testing.T) {
	var b bytes.Buffer
	err := WriteCurveSVG(&b, CurvePlot{Panels: []Panel{{Lines: []Line{{Points: []Point{{1, 1}, {2, math.NaN()}, {3, 3}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	els := svgElements(t, b.Bytes())
	if n := len(els["circle"]); n != 2 {
		t.Errorf("%d dots, want 2", n)
	}
	if strings.Contains(b.String(), "NaN") {
		t.Error("NaN written into the SVG")
	}
}

func TestFormatBytesAndCount(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{FormatBytes(64), "64 B"},
		{FormatBytes(1024), "1 KiB"},
		{FormatBytes(65536), "64 KiB"},
		{FormatBytes(1536), "1.5 KiB"},
		{FormatCount(500), "500"},
		{FormatCount(10000), "10k"},
		{FormatCount(250000), "250k"},
		{FormatCount(1e6), "1M"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

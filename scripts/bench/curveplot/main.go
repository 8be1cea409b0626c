// Command curveplot turns benchmark runs into a scaling curve: an SVG plot
// (internal/bench.WriteCurveSVG) and a markdown table. scripts/bench/curves.sh
// runs it; it is not part of the parley binary.
//
// Two kinds of input:
//
//	curveplot --reports MANIFEST [flags]
//
// MANIFEST is tab-separated with a header line: the swept parameter, the
// path of a JSON report written by `parley bench ... --json` (relative to
// the manifest), then any further columns, copied into the table as they
// are (load average, CPU per operation). The plot has throughput (ops/s)
// above and latency (p50, p99 in ms) below. Rows of the same x are rounds
// of one point: the medians are shown.
//
//	curveplot --values FILE [flags]
//
// FILE is tab-separated with a header line and the columns x, panel,
// series, y: each row one measured value. Rows of one panel share a chart;
// rows whose panel is "-" go into the table only. The table has one row
// per x and one column per panel and series.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/parley-chat/parley/internal/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "curveplot:", err)
		os.Exit(1)
	}
}

// options are curveplot's flags.
type options struct {
	reports, values string
	title, xLabel   string
	logX            bool
	xFormat         string
	svg, md         string
	bytesPerOp      bool
}

// run parses args, reads the input and writes the plot and the table (to
// --md, or out).
func run(args []string, out io.Writer) error {
	var o options
	fs := flag.NewFlagSet("curveplot", flag.ContinueOnError)
	fs.StringVar(&o.reports, "reports", "", "tab-separated manifest: x, JSON report, further columns for the table")
	fs.StringVar(&o.values, "values", "", "tab-separated values: x, panel, series, y")
	fs.StringVar(&o.title, "title", "", "title of the plot")
	fs.StringVar(&o.xLabel, "x-label", "", "label of the x axis (default: the first header column)")
	fs.BoolVar(&o.logX, "log-x", false, "space x logarithmically (geometric sweeps)")
	fs.StringVar(&o.xFormat, "x-format", "count", "x tick labels: count (10k, 1M), bytes (64 B, 1 KiB) or plain")
	fs.StringVar(&o.svg, "svg", "", "write the plot to this file")
	fs.StringVar(&o.md, "md", "", "write the markdown table to this file (default: standard output)")
	fs.BoolVar(&o.bytesPerOp, "bytes-per-op", false, "with --reports: x is bytes per operation; add a MiB/s panel")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (o.reports == "") == (o.values == "") {
		return errors.New("give one of --reports and --values")
	}
	var (
		c   curve
		err error
	)
	if o.reports != "" {
		c, err = fromReports(o.reports, o.bytesPerOp)
	} else {
		c, err = fromValues(o.values)
	}
	if err != nil {
		return err
	}
	if o.xLabel == "" {
		o.xLabel = c.xName
	}
	tick, ok := map[string]func(float64) string{
		"count": bench.FormatCount, "bytes": bench.FormatBytes,
		"plain": func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) },
	}[o.xFormat]
	if !ok {
		return fmt.Errorf("--x-format %q: want count, bytes or plain", o.xFormat)
	}
	if o.svg != "" {
		f, err := os.Create(o.svg)
		if err != nil {
			return err
		}
		err = bench.WriteCurveSVG(f, bench.CurvePlot{Title: o.title, XLabel: o.xLabel, LogX: o.logX, XTick: tick, Panels: c.panels})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", o.svg, err)
		}
	}
	w := out
	if o.md != "" {
		f, err := os.Create(o.md)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	c.table.write(w, o.xLabel, tick)
	if o.md != "" {
		return w.(*os.File).Close()
	}
	return nil
}

// curve is what an input turns into: the plot's panels and the table.
type curve struct {
	xName  string
	panels []bench.Panel
	table  table
}

// table is a markdown table with one row per x.
type table struct {
	cols []string
	rows []row
}

// row is one x's cells, in the order of the table's columns.
type row struct {
	x     float64
	cells []string
}

// write prints t as markdown, x first.
func (t table) write(w io.Writer, xName string, tick func(float64) string) {
	fmt.Fprintf(w, "| %s | %s |\n", xName, strings.Join(t.cols, " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat("---:|", len(t.cols)+1))
	for _, r := range t.rows {
		fmt.Fprintf(w, "| %s | %s |\n", tick(r.x), strings.Join(r.cells, " | "))
	}
}

// readTSV reads a tab-separated file: its header and its rows, each with
// as many fields as the header (blank lines skipped).
func readTSV(path string) (header []string, rows [][]string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(line, "\t")
		if header == nil {
			header = fields
			continue
		}
		if len(fields) != len(header) {
			return nil, nil, fmt.Errorf("%s:%d: %d fields, the header has %d", path, n, len(fields), len(header))
		}
		rows = append(rows, fields)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if header == nil {
		return nil, nil, fmt.Errorf("%s: empty", path)
	}
	return header, rows, nil
}

// parseX parses the swept parameter of a row.
func parseX(path, s string) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%s: x %q is not a number", path, s)
	}
	return x, nil
}

// fromReports reads a manifest of bench reports. Several rows of one x
// are rounds of the same point: the plot and the table show the median of
// each figure over them (ops/s, p50 and p99 each its own median), the
// errors added up, and their further columns joined with "; ".
func fromReports(path string, bytesPerOp bool) (curve, error) {
	header, rows, err := readTSV(path)
	if err != nil {
		return curve{}, err
	}
	if len(header) < 2 {
		return curve{}, fmt.Errorf("%s: want at least the columns x and report", path)
	}
	type round struct {
		r      *bench.Report
		extras []string
	}
	byX := map[float64][]round{}
	rounds := 1
	for _, f := range rows {
		x, err := parseX(path, f[0])
		if err != nil {
			return curve{}, err
		}
		file := f[1]
		if !filepath.IsAbs(file) {
			file = filepath.Join(filepath.Dir(path), file)
		}
		r, err := readReport(file)
		if err != nil {
			return curve{}, err
		}
		byX[x] = append(byX[x], round{r, f[2:]})
		rounds = max(rounds, len(byX[x]))
	}
	c := curve{xName: header[0]}
	c.table.cols = []string{"ops/s", "p50 ms", "p99 ms", "errors"}
	if bytesPerOp {
		c.table.cols = slices.Insert(c.table.cols, 1, "MiB/s")
	}
	if rounds > 1 {
		c.table.cols = append(c.table.cols, "runs", "ops/s of each run")
	}
	c.table.cols = append(c.table.cols, header[2:]...)
	ops := bench.Line{Label: "ops/s"}
	mib := bench.Line{Label: "MiB/s"}
	p50 := bench.Line{Label: "p50"}
	p99 := bench.Line{Label: "p99"}
	for _, x := range slices.Sorted(maps.Keys(byX)) {
		rs := byX[x]
		figure := func(f func(*bench.Report) float64) float64 {
			vs := make([]float64, len(rs))
			for i, r := range rs {
				vs[i] = f(r.r)
			}
			return median(vs)
		}
		o := figure(func(r *bench.Report) float64 { return r.OpsPerS })
		l50 := figure(func(r *bench.Report) float64 { return r.Latency.At(50) })
		l99 := figure(func(r *bench.Report) float64 { return r.Latency.At(99) })
		var errs int64
		each := make([]string, len(rs))
		extras := make([][]string, len(header)-2)
		for i, r := range rs {
			errs += r.r.Errors
			each[i] = fmt.Sprintf("%.0f", r.r.OpsPerS)
			for j, e := range r.extras {
				extras[j] = append(extras[j], e)
			}
		}
		ops.Points = append(ops.Points, bench.Point{X: x, Y: o})
		p50.Points = append(p50.Points, bench.Point{X: x, Y: l50})
		p99.Points = append(p99.Points, bench.Point{X: x, Y: l99})
		cells := []string{fmt.Sprintf("%.0f", o), fmt.Sprintf("%.2f", l50), fmt.Sprintf("%.2f", l99), strconv.FormatInt(errs, 10)}
		if bytesPerOp {
			v := o * x / (1 << 20)
			mib.Points = append(mib.Points, bench.Point{X: x, Y: v})
			cells = slices.Insert(cells, 1, fmt.Sprintf("%.1f", v))
		}
		if rounds > 1 {
			cells = append(cells, strconv.Itoa(len(rs)), strings.Join(each, ", "))
		}
		for _, e := range extras {
			cells = append(cells, strings.Join(e, "; "))
		}
		c.table.rows = append(c.table.rows, row{x: x, cells: cells})
	}
	c.panels = []bench.Panel{{YLabel: "operations per second", Lines: []bench.Line{ops}}}
	if bytesPerOp {
		c.panels = append(c.panels, bench.Panel{YLabel: "MiB/s of values", Lines: []bench.Line{mib}})
	}
	c.panels = append(c.panels, bench.Panel{YLabel: "latency (ms)", Lines: []bench.Line{p50, p99}})
	return c, nil
}

// median returns the median of vs (the mean of the middle two when even).
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// readReport reads one JSON report of parley bench.
func readReport(path string) (*bench.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r bench.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// fromValues reads a file of measured values (x, panel, series, y).
func fromValues(path string) (curve, error) {
	header, rows, err := readTSV(path)
	if err != nil {
		return curve{}, err
	}
	if len(header) != 4 {
		return curve{}, fmt.Errorf("%s: want the columns x, panel, series, y", path)
	}
	c := curve{xName: header[0]}
	type key struct{ panel, series string }
	var keys []key          // table columns, in order of appearance
	var panelNames []string // plotted panels, in order of appearance
	lines := map[key]*bench.Line{}
	cells := map[float64]map[key]string{}
	for _, f := range rows {
		x, err := parseX(path, f[0])
		if err != nil {
			return curve{}, err
		}
		k := key{f[1], f[2]}
		if _, ok := lines[k]; !ok {
			lines[k] = &bench.Line{Label: k.series}
			keys = append(keys, k)
			if k.panel != "-" && !slices.Contains(panelNames, k.panel) {
				panelNames = append(panelNames, k.panel)
			}
		}
		if cells[x] == nil {
			cells[x] = map[key]string{}
		}
		cells[x][k] = f[3]
		if k.panel == "-" {
			continue
		}
		y, err := strconv.ParseFloat(strings.TrimSpace(f[3]), 64)
		if err != nil {
			return curve{}, fmt.Errorf("%s: y %q of %s/%s is not a number", path, f[3], k.panel, k.series)
		}
		lines[k].Points = append(lines[k].Points, bench.Point{X: x, Y: y})
	}
	for _, p := range panelNames {
		pn := bench.Panel{YLabel: p}
		for _, k := range keys {
			if k.panel == p {
				pn.Lines = append(pn.Lines, *lines[k])
			}
		}
		c.panels = append(c.panels, pn)
	}
	for _, k := range keys {
		name := k.series
		if k.panel != "-" && len(panelNames) > 1 {
			name = k.panel + ": " + k.series
		}
		c.table.cols = append(c.table.cols, name)
	}
	for _, x := range slices.Sorted(maps.Keys(cells)) {
		r := row{x: x}
		for _, k := range keys {
			v, ok := cells[x][k]
			if !ok {
				v = "–"
			}
			r.cells = append(r.cells, v)
		}
		c.table.rows = append(c.table.rows, r)
	}
	return c, nil
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/bench"
)

// mustWrite writes content to dir/name and returns the path.
func mustWrite(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// mustReport writes a bench report with the given throughput and p99.
func mustReport(t *testing.T, dir, name string, opsPerS, p50, p99 float64) {
	t.Helper()
	b, err := json.Marshal(bench.Report{Workload: "kv/put", Started: time.Unix(0, 0), OpsPerS: opsPerS,
		Latency: bench.Latency{Percentiles: []bench.Percentile{{P: 50, Ms: p50}, {P: 99, Ms: p99}}}})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, dir, name, string(b))
}

// runWithPlot runs curveplot with args and a plot file in dir, and returns
// the table it printed and the plot it wrote.
func runWithPlot(t *testing.T, dir string, args ...string) (table, svg string) {
	t.Helper()
	path := filepath.Join(dir, "out.svg")
	var out strings.Builder
	if err := run(append(args, "--svg", path), &out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), string(b)
}

func TestRun_Reports(t *testing.T) {
	dir := t.TempDir()
	mustReport(t, dir, "c1.json", 1000, 0.8, 1.5)
	mustReport(t, dir, "c64.json", 5000, 9, 45)
	// Out of order: the table is sorted by x.
	manifest := mustWrite(t, dir, "m.tsv", "clients\treport\tload\n64\tc64.json\t1.5 1.2 1.0\n1\tc1.json\t0.1 0.1 0.1\n")
	table, svg := runWithPlot(t, dir, "--reports", manifest, "--log-x", "--title", "kv <puts>")
	want := "| clients | ops/s | p50 ms | p99 ms | errors | load |\n" +
		"|---:|---:|---:|---:|---:|---:|\n" +
		"| 1 | 1000 | 0.80 | 1.50 | 0 | 0.1 0.1 0.1 |\n" +
		"| 64 | 5000 | 9.00 | 45.00 | 0 | 1.5 1.2 1.0 |\n"
	if table != want {
		t.Errorf("table:\n%s\nwant:\n%s", table, want)
	}
	if !strings.Contains(svg, "kv &lt;puts&gt;") || strings.Count(svg, "<polyline") != 3 {
		t.Errorf("plot lacks the escaped title or its three lines:\n%s", svg)
	}
}

func TestRun_ReportsBytesPerOp(t *testing.T) {
	dir := t.TempDir()
	mustReport(t, dir, "v.json", 1024, 1, 2)
	manifest := mustWrite(t, dir, "m.tsv", "value size\treport\n1024\tv.json\n")
	var out strings.Builder
	if err := run([]string{"--reports", manifest, "--bytes-per-op", "--x-format", "bytes"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| 1 KiB | 1024 | 1.0 | 1.00 | 2.00 | 0 |") {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestRun_Values(t *testing.T) {
	dir := t.TempDir()
	values := mustWrite(t, dir, "v.tsv", "keys\tpanel\tseries\ty\n"+
		"0\tRSS (MiB)\tn1\t50\n0\tRSS (MiB)\tn2\t52\n0\theap (MiB)\tn1\t10\n0\t-\tload\t0.5\n"+
		"100000\tRSS (MiB)\tn1\t90\n100000\theap (MiB)\tn1\t30\n100000\t-\tload\t1.5\n")
	table, svg := runWithPlot(t, dir, "--values", values)
	want := "| keys | RSS (MiB): n1 | RSS (MiB): n2 | heap (MiB): n1 | load |\n" +
		"|---:|---:|---:|---:|---:|\n" +
		"| 0 | 50 | 52 | 10 | 0.5 |\n" +
		"| 100k | 90 | – | 30 | 1.5 |\n"
	if table != want {
		t.Errorf("table:\n%s\nwant:\n%s", table, want)
	}
	if n := strings.Count(svg, "<polyline"); n != 3 {
		t.Errorf("%d lines plotted, want 3 (the load column is table-only)", n)
	}
}

func TestRun_Errors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no input", nil},
		{"both inputs", []string{"--reports", "a", "--values", "b"}},
		{"missing file", []string{"--values", filepath.Join(dir, "none.tsv")}},
		{"bad x", []string{"--values", mustWrite(t, dir, "x.tsv", "x\tp\ts\ty\nten\tp\ts\t1\n")}},
		{"bad y", []string{"--values", mustWrite(t, dir, "y.tsv", "x\tp\ts\ty\n10\tp\ts\tmany\n")}},
		{"short row", []string{"--values", mustWrite(t, dir, "s.tsv", "x\tp\ts\ty\n10\tp\ts\n")}},
		{"missing report", []string{"--reports", mustWrite(t, dir, "r.tsv", "x\treport\n1\tnone.json\n")}},
		{"bad x format", []string{"--values", mustWrite(t, dir, "ok.tsv", "x\tp\ts\ty\n1\tp\ts\t1\n"), "--x-format", "roman"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := run(tc.args, &strings.Builder{}); err == nil {
				t.Error("no error")
			}
		})
	}
}

package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/bench"
)

func TestParseBenchFsync(t *testing.T) {
	const path = "parley bench fsync"
	t.Run("defaults", func(t *testing.T) {
		o, err := ParseBenchFsync(path, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if o != (BenchFsyncOptions{Dir: ".", Count: 1000, Size: 256, Parallel: 1}) {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("flags", func(t *testing.T) {
		o, err := ParseBenchFsync(path, []string{"--dir", "/d", "--count", "20", "--size", "4096", "--parallel", "3", "--json", "f.json", "-q"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if o != (BenchFsyncOptions{Dir: "/d", Count: 20, Size: 4096, Parallel: 3, JSON: "f.json", Quiet: true}) {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("bad values", func(t *testing.T) {
		for _, args := range [][]string{
			{"--dir", ""}, {"--count", "0"}, {"--size", "0"}, {"--parallel", "0"}, {"--count", "x"},
		} {
			_, err := ParseBenchFsync(path, args, nil)
			if _, ok := err.(*usageError); !ok || !strings.Contains(err.Error(), args[0]) {
				t.Errorf("%v: err = %v, want a usage error naming %s", args, err, args[0])
			}
		}
		if _, err := ParseBenchFsync(path, []string{"extra"}, nil); err == nil {
			t.Error("a positional argument was accepted")
		}
	})
}

func TestBenchFsync(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "fsync.json")
	r := run(context.Background(), nil, "", "bench", "fsync", "--dir", dir, "--count", "20", "--parallel", "2", "--json", file, "-q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep bench.Report
	mustDecode(t, file, func(b []byte) error { return json.Unmarshal(b, &rep) })
	if rep.Workload != "fsync" || rep.Ops != 40 || rep.Workers != 2 || rep.Params["files"] != "2" || rep.Latency.At(50) <= 0 {
		t.Errorf("report: workload %s ops %d workers %d params %v p50 %.3f", rep.Workload, rep.Ops, rep.Workers, rep.Params, rep.Latency.At(50))
	}
	if !strings.Contains(r.stdout, "Workload:              fsync") || !strings.Contains(r.stdout, "  99%") {
		t.Errorf("text report:\n%s", r.stdout)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d temporary files left behind", len(left))
	}
}

func TestRun_DispatchBenchFsync(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"bench", "fsync", "-h"}, 0, "--parallel", ""},
		{[]string{"bench", "fsync", "--parallel", "0"}, 2, "", "--parallel"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(context.Background(), nil, "", tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("exit %d stdout %q stderr %q; want exit %d, stdout with %q, stderr with %q",
					r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

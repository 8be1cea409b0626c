package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/bench"
)

func TestParseBenchEtcdKV(t *testing.T) {
	const path = "parley bench etcd-kv"
	t.Run("defaults match bench kv", func(t *testing.T) {
		o, err := ParseBenchEtcdKV(path, nil, envMap(map[string]string{"PARLEY_SERVER": "http://h:1"}))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.Servers, []string{defaultEtcdEndpoint}) || o.Clients != 16 || o.Duration != 10*time.Second ||
			o.ValueSize != 256 || o.Keys != 10000 || o.Mix != "put" || o.KeyPrefix != "bench/" {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("flags", func(t *testing.T) {
		o, err := ParseBenchEtcdKV(path, []string{
			"--endpoints", "http://127.0.0.1:1,http://127.0.0.1:2", "--endpoints", "http://127.0.0.1:3",
			"--clients", "64", "--requests", "500", "--value-size", "2000", "--keys", "10", "--mix", "mixed",
			"--csv", "a.csv", "--json", "a.json", "--svg", "a.svg", "--warmup", "1s", "-q",
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"}
		if !slices.Equal(o.Servers, want) || o.Clients != 64 || o.Requests != 500 || o.Duration != 0 ||
			o.ValueSize != 2000 || o.Keys != 10 || o.Mix != "mixed" || o.CSV != "a.csv" || o.JSON != "a.json" ||
			o.SVG != "a.svg" || o.Warmup != time.Second || !o.Quiet {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("help shows endpoints, not servers", func(t *testing.T) {
		_, err := ParseBenchEtcdKV(path, []string{"-h"}, nil)
		h, ok := err.(*helpError)
		if !ok || !strings.Contains(h.text, "--endpoints") || strings.Contains(h.text, "--servers") || !strings.Contains(h.text, "--value-size") {
			t.Errorf("help = %v", err)
		}
	})
	t.Run("bad values", func(t *testing.T) {
		for _, args := range [][]string{
			{"--endpoints", "127.0.0.1:2379"}, {"--mix", "delete"}, {"--clients", "0"},
			{"--keys", "0"}, {"--duration", "0s"}, {"--value-size", "-1"},
		} {
			_, err := ParseBenchEtcdKV(path, args, nil)
			if _, ok := err.(*usageError); !ok || !strings.Contains(err.Error(), args[0]) {
				t.Errorf("%v: err = %v, want a usage error naming %s", args, err, args[0])
			}
		}
	})
}

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

func TestBenchEtcdKV_FakeGateway(t *testing.T) {
	var puts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/health":
			io.WriteString(w, `{"health":"true"}`)
		case r.Method == http.MethodPost && r.URL.Path == "/v3/kv/put":
			puts.Add(1)
			io.WriteString(w, `{"header":{}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "etcd.json")
	o, err := ParseBenchEtcdKV("parley bench etcd-kv", []string{"--endpoints", srv.URL, "--requests", "50", "--clients", "4", "--json", file, "-q"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := BenchEtcdKV(context.Background(), o, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	mustDecode(t, file, func(b []byte) error { return json.Unmarshal(b, &rep) })
	if rep.Workload != "etcd-kv/put" || rep.Ops != 50 || rep.Errors != 0 || puts.Load() != 50 || rep.Params["endpoints"] != srv.URL {
		t.Errorf("report: workload %s ops %d errors %d params %v; server saw %d puts", rep.Workload, rep.Ops, rep.Errors, rep.Params, puts.Load())
	}
	if !strings.Contains(out.String(), "Workload:              etcd-kv/put") {
		t.Errorf("text report:\n%s", out.String())
	}

	o.Servers = []string{srv.URL + "/down"}
	if err := BenchEtcdKV(context.Background(), o, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "not healthy") {
		t.Errorf("unhealthy member: err = %v", err)
	}
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

func TestRun_DispatchBenchPeers(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"bench", "-h"}, 0, "etcd-kv", ""},
		{[]string{"bench", "etcd-kv", "-h"}, 0, "--endpoints", ""},
		{[]string{"bench", "fsync", "-h"}, 0, "--parallel", ""},
		{[]string{"bench", "fsync", "--parallel", "0"}, 2, "", "--parallel"},
		{[]string{"bench", "etcd-kv", "--endpoints", "http://127.0.0.1:1", "--duration", "1s"}, 1, "", "127.0.0.1:1"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(ctx, nil, "", tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("exit %d stdout %q stderr %q; want exit %d, stdout with %q, stderr with %q",
					r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

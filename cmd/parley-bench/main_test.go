package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parley-chat/parley/internal/bench"
	"github.com/parley-chat/parley/internal/cli"
)

// run runs the parley-bench command line args with the real peer
// workloads.
func run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = cli.RunPeerBench(context.Background(), &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}, peerWorkloads(), args)
	return code, out.String(), errOut.String()
}

// TestParleyBench_EtcdKVFakeGateway runs `parley-bench etcd-kv` through
// the real wiring against a fake etcd gateway.
func TestParleyBench_EtcdKVFakeGateway(t *testing.T) {
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
	code, out, errOut := run("etcd-kv", "--endpoints", srv.URL, "--requests", "50", "--clients", "4", "--json", file, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Workload != "etcd-kv/put" || rep.Ops != 50 || rep.Errors != 0 || puts.Load() != 50 || rep.Params["endpoints"] != srv.URL {
		t.Errorf("report: workload %s ops %d errors %d params %v; server saw %d puts", rep.Workload, rep.Ops, rep.Errors, rep.Params, puts.Load())
	}
	if !strings.Contains(out, "Workload:              etcd-kv/put") {
		t.Errorf("text report:\n%s", out)
	}

	code, _, errOut = run("etcd-kv", "--endpoints", srv.URL+"/down", "--requests", "5", "-q")
	if code != 1 || !strings.Contains(errOut, "not healthy") {
		t.Errorf("unhealthy member: exit %d, stderr %q", code, errOut)
	}
}

// TestParleyBench_PeersUnreachable checks that each peer opens through the
// wiring: an unreachable server fails the run (exit 1) naming it.
func TestParleyBench_PeersUnreachable(t *testing.T) {
	for _, args := range [][]string{
		{"etcd-kv", "--endpoints", "http://127.0.0.1:1", "--duration", "1s"},
		{"nats-publish", "--urls", "nats://127.0.0.1:1", "--requests", "1", "--clients", "1"},
		{"rabbitmq-queue", "--urls", "amqp://guest:secret@127.0.0.1:1/", "--requests", "1", "--clients", "1"},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, _, errOut := run(args...)
			if code != 1 || !strings.Contains(errOut, "127.0.0.1:1") || strings.Contains(errOut, "secret") {
				t.Errorf("exit %d, stderr %q; want 1 and an error naming 127.0.0.1:1 without the password", code, errOut)
			}
		})
	}
}

package cli

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

func TestServe_EndToEnd(t *testing.T) {
	url, stop := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := "--server=" + url
	tok := "--token=" + signUp(t, url)

	t.Run("put then get", func(t *testing.T) {
		if v := mustRun(t, ctx, "kv", "put", "greeting", "hello", srv, tok); v != "1\n" {
			t.Errorf("put printed %q, want version 1", v)
		}
		r := run(ctx, nil, "", "kv", "get", "greeting", srv, tok, "-v")
		if r.code != 0 || r.stdout != "hello" || !strings.Contains(r.stderr, "version 1") {
			t.Errorf("get = %+v, want hello with version 1 on stderr", r)
		}
	})

	t.Run("value from stdin", func(t *testing.T) {
		if r := run(ctx, nil, "line one\nline two\n", "kv", "put", "doc", "-", srv, tok); r.code != 0 {
			t.Fatalf("put from stdin: %+v", r)
		}
		if got := mustRun(t, ctx, "kv", "get", "doc", srv, tok, "--stale"); got != "line one\nline two\n" {
			t.Errorf("get = %q", got)
		}
	})

	t.Run("compare and swap", func(t *testing.T) {
		r := run(ctx, nil, "", "kv", "put", "greeting", "bye", "--if-version", "7", srv, tok)
		if r.code != 1 || !strings.HasPrefix(r.stderr, "error: ") || !strings.Contains(r.stderr, "(precondition_failed)") {
			t.Errorf("stale CAS = %+v, want exit 1 with precondition_failed", r)
		}
		if v := mustRun(t, ctx, "kv", "put", "greeting", "bye", "--if-version", "1", "--idempotency-key", "k1", srv, tok); v != "2\n" {
			t.Errorf("CAS printed %q, want version 2", v)
		}
	})

	t.Run("list", func(t *testing.T) {
		if got := mustRun(t, ctx, "kv", "list", srv, tok); got != "doc\ngreeting\n" {
			t.Errorf("list = %q", got)
		}
		if got := mustRun(t, ctx, "kv", "list", "--prefix", "gr", srv, tok); got != "greeting\n" {
			t.Errorf("list --prefix = %q", got)
		}
		if got := mustRun(t, ctx, "kv", "list", "--limit", "1", srv, tok); got != "doc\n" {
			t.Errorf("list --limit 1 = %q", got)
		}
		if got := mustRun(t, ctx, "kv", "list", "--after", "doc", "-l", srv, tok); !strings.Contains(got, "KEY") || !strings.Contains(got, "greeting  2") {
			t.Errorf("list -l = %q", got)
		}
	})

	t.Run("delete", func(t *testing.T) {
		mustRun(t, ctx, "kv", "del", "doc", srv, tok)
		r := run(ctx, nil, "", "kv", "get", "doc", srv, tok)
		if r.code != 1 || !strings.Contains(r.stderr, "(not_found)") {
			t.Errorf("get after delete = %+v, want not_found", r)
		}
	})

	t.Run("cluster status", func(t *testing.T) {
		out := mustRun(t, ctx, "cluster", "status", srv, tok)
		for _, w := range []string{"NODE", "n1", "alive", "PARTITION", "leader"} {
			if !strings.Contains(out, w) {
				t.Errorf("status lacks %q:\n%s", w, out)
			}
		}
		var st client.ClusterStatus
		if err := json.Unmarshal([]byte(mustRun(t, ctx, "cluster", "status", "--json", srv, tok)), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Nodes) != 1 || len(st.Partitions) != 4 {
			t.Errorf("status = %+v, want 1 node and 4 partitions", st)
		}
	})

	t.Run("cancelling ctx shuts down with exit 0", func(t *testing.T) {
		if code := stop(); code != 0 {
			t.Errorf("exit code %d", code)
		}
		r := run(ctx, nil, "", "kv", "get", "greeting", srv, tok)
		if r.code != 1 || !strings.Contains(r.stderr, "unreachable") {
			t.Errorf("after shutdown get = %+v, want unreachable", r)
		}
	})
}

func TestServe_StartupError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := run(context.Background(), nil, "", "serve", "--data-dir", t.TempDir(), "--http", ln.Addr().String(), "--cluster", "127.0.0.1:0", "--log-level", "error")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: ") || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, ln.Addr().String()) {
		t.Errorf("serve on a busy port = %+v, want exit 1 and one line naming the address", r)
	}
}

func TestServe_TLSFiles(t *testing.T) {
	r := run(context.Background(), nil, "", "serve", "--data-dir", t.TempDir(), "--tls-cert", "missing.pem", "--tls-key", "missing.key")
	if r.code != 1 || !strings.Contains(r.stderr, "--tls-cert") {
		t.Errorf("serve with missing certificate = %+v, want exit 1 naming --tls-cert", r)
	}
	r = run(context.Background(), nil, "", "serve", "--data-dir", t.TempDir(),
		"--cluster-tls-cert", "c.pem", "--cluster-tls-key", "k.pem", "--cluster-tls-ca", "ca.pem")
	if r.code != 1 || !strings.Contains(r.stderr, "--cluster-tls") {
		t.Errorf("serve with missing cluster certificate = %+v", r)
	}
}

func TestHTTPURL(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		https bool
		want  string
	}{
		{"127.0.0.1:7070", false, "http://127.0.0.1:7070"},
		{"0.0.0.0:7070", false, "http://localhost:7070"},
		{"[::]:7070", true, "https://localhost:7070"},
		{"[::1]:7070", false, "http://[::1]:7070"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if got := httpURL(tc.addr, tc.https); got != tc.want {
				t.Errorf("httpURL(%q) = %q, want %q", tc.addr, got, tc.want)
			}
		})
	}
}

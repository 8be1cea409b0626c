package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

// fakeAudit serves GET /api/v1/audit with a fixed report (or a 403), and
// remembers the last query.
type fakeAudit struct {
	mu     sync.Mutex
	rep    client.AuditReport
	refuse bool
	query  url.Values
}

func (f *fakeAudit) start(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/audit", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.query = r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		if f.refuse {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":{"code":"forbidden","message":"only an admin may read the audit log","retryable":false}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(f.rep)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// hostile is an actor name full of what a terminal acts on: an escape
// sequence clearing the screen, a carriage return, a C1 CSI, a right-to-left
// override, DEL and a tab.
const hostile = "mallory\x1b[2J\rroot\u009b31m\u202eevil\x7f\tx\\"

// rawTerminalChars lists characters that must never reach the terminal
// raw.
var rawTerminalChars = []string{"\x1b", "\r", "\u009b", "\u202e", "\x7f", "\t"}

func TestAuditCommand(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	f := &fakeAudit{rep: client.AuditReport{
		Events: []client.AuditEvent{
			{Time: at, Node: "n1", Kind: "login", Outcome: "refused", Actor: hostile, Remote: "192.0.2.7", Detail: "unauthorized"},
			{Time: at.Add(time.Second), Node: "n2", Kind: "admin_action", Outcome: "ok", Actor: "root", Target: "GET /api/v1/audit"},
		},
		Unreachable: []string{"n3"},
	}}
	srv := f.start(t)

	t.Run("table, control characters escaped", func(t *testing.T) {
		r := run(ctx, nil, "", "audit", "--kind", "login", "--actor", "Mallory", "--since", "1h", "--limit", "7", "--server", srv, "--token", "t")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		for _, c := range rawTerminalChars {
			if strings.Contains(r.stdout, c) || strings.Contains(r.stderr, c) {
				t.Errorf("output holds %q raw:\n%s", c, r.stdout)
			}
		}
		for _, want := range []string{"TIME", "OUTCOME", `mallory\x1b[2J\x0droot\x9b31m\u202eevil\x7f\x09x\\`, "192.0.2.7", "GET /api/v1/audit", "admin_action"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("table lacks %q:\n%s", want, r.stdout)
			}
		}
		if r.stderr != "warning: n3 did not answer; their events are missing\n" {
			t.Errorf("stderr %q", r.stderr)
		}
		q := f.query
		since, err := time.Parse(time.RFC3339Nano, q.Get("since"))
		if q.Get("kind") != "login" || q.Get("actor") != "Mallory" || q.Get("limit") != "7" || err != nil || time.Since(since) < time.Hour || time.Since(since) > time.Hour+time.Minute {
			t.Errorf("query %v", q)
		}
	})
	t.Run("json, control characters escaped, same values", func(t *testing.T) {
		r := run(ctx, nil, "", "audit", "--json", "--server", srv, "--token", "t")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		for _, c := range rawTerminalChars {
			if strings.Contains(r.stdout, c) {
				t.Errorf("JSON holds %q raw:\n%s", c, r.stdout)
			}
		}
		var rep client.AuditReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Events) != 2 || rep.Events[0].Actor != hostile {
			t.Fatalf("--json = %+v, %v\n%s", rep, err, r.stdout)
		}
		if f.query.Has("since") || f.query.Get("limit") != "100" {
			t.Errorf("default query %v", f.query)
		}
	})
	t.Run("bad flags", func(t *testing.T) {
		for _, args := range [][]string{{"--limit", "0"}, {"--limit", "1001"}, {"--since", "yesterday"}, {"--since", "-1h"}} {
			if r := run(ctx, nil, "", append([]string{"audit", "--server", srv, "--token", "t"}, args...)...); r.code != 2 {
				t.Errorf("audit %v: exit %d, want 2 (%s)", args, r.code, r.stderr)
			}
		}
	})
	t.Run("non-admin", func(t *testing.T) {
		f.mu.Lock()
		f.refuse = true
		f.mu.Unlock()
		r := run(ctx, nil, "", "audit", "--server", srv, "--token", "t")
		if r.code != 1 || !strings.Contains(r.stderr, "(forbidden)") {
			t.Errorf("audit as a non-admin = %+v", r)
		}
	})
}

func TestTermSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"alice", "alice"},
		{"", ""},
		{"héllo 世界", "héllo 世界"},
		{"a\x1b[31mb", `a\x1b[31mb`},
		{"a\r\n\tb", `a\x0d\x0a\x09b`},
		{"\x7f\u0085\u009b", `\x7f\x85\x9b`},
		{"abc\u202edef\u2066\u200f", `abc\u202edef\u2066\u200f`},
		{`C:\x1b`, `C:\\x1b`},
		{"bad\xffutf8", `bad\xffutf8`},
	} {
		if got := termSafe(tc.in); got != tc.want {
			t.Errorf("termSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJSONTermSafe(t *testing.T) {
	in := map[string]string{"a": hostile, "b": "plain é", "c": "\u2028"}
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out := jsonTermSafe(b)
	for _, c := range rawTerminalChars {
		if strings.Contains(string(out), c) {
			t.Errorf("%q raw in %s", c, out)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["a"] != hostile || back["b"] != "plain é" || back["c"] != "\u2028" {
		t.Fatalf("round trip = %q, %v", back, err)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{in: "1h", want: now.Add(-time.Hour)},
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "2026-11-01T08:00:00Z", want: time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)},
		{in: "0s", bad: true},
		{in: "-5m", bad: true},
		{in: "last week", bad: true},
	} {
		got, err := parseSince(tc.in, now)
		if tc.bad != (err != nil) || (!tc.bad && !got.Equal(tc.want)) {
			t.Errorf("parseSince(%q) = %v, %v; want %v (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

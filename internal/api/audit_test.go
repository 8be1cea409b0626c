package api

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/errs"
)

// localAudit is an AuditSource over one node's Log.
type localAudit struct{ log *audit.Log }

func (l localAudit) AuditEvents(_ context.Context, f audit.Filter) (*AuditReport, error) {
	evs, err := l.log.Query(f)
	return &AuditReport{Events: evs}, err
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (slog handlers).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// auditEnv is a fullEnv with an audit log whose lines go to lines.
type auditEnv struct {
	*fullEnv
	lines *syncBuffer
}

func newAuditEnv(t *testing.T, cfg Config) *auditEnv {
	t.Helper()
	lines := &syncBuffer{}
	log := audit.NewLog("n1", slog.New(slog.NewJSONHandler(lines, &slog.HandlerOptions{Level: slog.LevelDebug})))
	cfg.Audit, cfg.AuditSource = log, localAudit{log}
	return &auditEnv{fullEnv: newFullEnv(t, envOptions{cfg: cfg}), lines: lines}
}

// events returns GET /api/v1/audit?query as the holder of token, and the
// raw body.
func (e *auditEnv) events(t *testing.T, token, query string) ([]audit.Event, string) {
	t.Helper()
	w := e.call(t, token, http.MethodGet, "/api/v1/audit?"+query, "")
	var rep AuditReport
	mustJSON(t, w, http.StatusOK, &rep)
	return rep.Events, w.Body.String()
}

// find returns the events of kind by actor with outcome.
func find(evs []audit.Event, kind, actor, outcome string) []audit.Event {
	var out []audit.Event
	for _, e := range evs {
		if e.Kind == kind && e.Actor == actor && e.Outcome == outcome {
			out = append(out, e)
		}
	}
	return out
}

// Failed and successful logins, logouts and the first admin's
// registration are audited with who and from where, never with a password
// or a token: not in GET /api/v1/audit, not in the log lines.
func TestAudit_Logins(t *testing.T) {
	e := newAuditEnv(t, Config{})
	root := e.signUp(t, "root") // the first user: admin
	bob := e.signUp(t, "bob")
	const wrong = "hunter2-not-bobs-password"
	w := e.do(t, http.MethodPost, "/api/v1/sessions", `{"username":"bob","password":"`+wrong+`"}`)
	mustErrorBody(t, w, http.StatusUnauthorized, "unauthorized")
	bob2 := e.login(t, "bob")
	if w := e.call(t, bob2, http.MethodDelete, "/api/v1/sessions/current", ""); w.Code != http.StatusNoContent {
		t.Fatalf("logout = %d %s", w.Code, w.Body)
	}

	evs, body := e.events(t, root, "")
	refused := find(evs, audit.KindLogin, "bob", audit.Refused)
	if len(refused) != 1 || refused[0].Detail != string(errs.Unauthorized) || refused[0].Remote != "192.0.2.1" || refused[0].Node != "n1" {
		t.Fatalf("failed login events %+v in %s", refused, body)
	}
	if ok := find(evs, audit.KindLogin, "bob", audit.OK); len(ok) != 2 {
		t.Fatalf("successful logins of bob: %+v in %s", ok, body)
	}
	if out := find(evs, audit.KindSessionRevoked, "bob", audit.OK); len(out) != 1 {
		t.Fatalf("logout events %+v in %s", out, body)
	}
	if reg := find(evs, audit.KindUserCreated, "root", audit.OK); len(reg) != 1 || reg[0].Target != "root" {
		t.Fatalf("first admin's registration %+v in %s", reg, body)
	}
	if reg := find(evs, audit.KindUserCreated, "bob", audit.OK); len(reg) != 0 {
		t.Fatalf("a self-registration was audited: %+v", reg)
	}
	lines := e.lines.String()
	for _, secret := range []string{wrong, "password-bob", "password-root", bob, bob2, root} {
		if strings.Contains(body, secret) {
			t.Errorf("GET /api/v1/audit contains the secret %q: %s", secret, body)
		}
		if strings.Contains(lines, secret) {
			t.Errorf("the audit log lines contain the secret %q", secret)
		}
	}
	if !strings.Contains(lines, `"kind":"login","outcome":"refused","actor":"bob"`) {
		t.Errorf("no log line for the failed login:\n%s", lines)
	}

	t.Run("filters", func(t *testing.T) {
		if evs, _ := e.events(t, root, "kind=login&actor=BOB"); len(evs) != 3 {
			t.Fatalf("kind=login&actor=BOB: %+v", evs)
		}
		if evs, _ := e.events(t, root, "kind=login&limit=1"); len(evs) != 1 || evs[0].Actor != "bob" || evs[0].Outcome != audit.OK {
			t.Fatalf("limit=1 is not the newest: %+v", evs)
		}
		if evs, _ := e.events(t, root, "since=2999-01-01T00:00:00Z"); len(evs) != 0 {
			t.Fatalf("since the future: %+v", evs)
		}
		if evs, _ := e.events(t, root, "kind=login&since=0"); len(evs) != 4 {
			t.Fatalf("since=0: %+v", evs)
		}
		for _, q := range []string{"since=yesterday", "limit=0", "limit=1001", "limit=x"} {
			mustErrorBody(t, e.call(t, root, http.MethodGet, "/api/v1/audit?"+q, ""), http.StatusBadRequest, "invalid")
		}
	})
}

// Every admin-only route answers 403 to other users and audits every call,
// refused, failed or done.
func TestAudit_AdminRoutes(t *testing.T) {
	adm := &recordingAdmin{}
	e := newAuditEnv(t, Config{Admin: adm})
	root := e.signUp(t, "root")
	bob := e.signUp(t, "bob")

	w := e.call(t, bob, http.MethodGet, "/api/v1/audit", "")
	mustError(t, w, http.StatusForbidden, "forbidden", "only an admin may read the audit log")
	if strings.Contains(w.Body.String(), "events") {
		t.Fatalf("a 403 carries events: %s", w.Body)
	}
	mustError(t, e.call(t, bob, http.MethodPost, "/api/v1/cluster/nodes/n2/drain", "{}"), http.StatusForbidden, "forbidden", "only an admin may change cluster membership")
	mustErrorBody(t, e.do(t, http.MethodGet, "/api/v1/audit", ""), http.StatusUnauthorized, "unauthorized")
	if len(adm.calls) != 0 {
		t.Fatalf("a refused request reached the cluster: %v", adm.calls)
	}
	mustJSON(t, e.call(t, root, http.MethodPost, "/api/v1/cluster/nodes/n2/drain", "{}"), http.StatusAccepted, nil)
	adm.err = errs.New(errs.NotFound, "no node %q in the cluster", "n9")
	mustErrorBody(t, e.call(t, root, http.MethodDelete, "/api/v1/cluster/nodes/n9", ""), http.StatusNotFound, "not_found")

	evs, body := e.events(t, root, "kind="+audit.KindAdmin)
	want := []struct{ actor, outcome, target, detail string }{
		{"bob", audit.Refused, "GET /api/v1/audit", "not an admin"},
		{"bob", audit.Refused, "POST /api/v1/cluster/nodes/{id}/drain", "not an admin"},
		{"", audit.Refused, "GET /api/v1/audit", "not signed in: unauthorized"},
		{"root", audit.OK, "POST /api/v1/cluster/nodes/{id}/drain", "POST /api/v1/cluster/nodes/n2/drain: 202"},
		{"root", audit.Failed, "DELETE /api/v1/cluster/nodes/{id}", "DELETE /api/v1/cluster/nodes/n9: 404"},
	}
	if len(evs) != len(want) {
		t.Fatalf("admin events %s, want %d", body, len(want))
	}
	for i, w := range want {
		if g := evs[i]; g.Actor != w.actor || g.Outcome != w.outcome || g.Target != w.target || g.Detail != w.detail || g.Remote != "192.0.2.1" {
			t.Errorf("event %d = %+v, want %+v", i, g, w)
		}
	}
	// The read just made is itself audited (after its answer).
	evs, _ = e.events(t, root, "kind="+audit.KindAdmin+"&actor=root")
	if ok := find(evs, audit.KindAdmin, "root", audit.OK); len(ok) != 2 || ok[1].Target != "GET /api/v1/audit" {
		t.Fatalf("reads of the audit log are not audited: %+v", evs)
	}
}

// Without an AuditSource the route is left out, and without a Recorder
// nothing breaks.
func TestAudit_NotConfigured(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	root := e.signUp(t, "root")
	mustErrorBody(t, e.call(t, root, http.MethodGet, "/api/v1/audit", ""), http.StatusNotFound, "not_found")
}

package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
)

func TestServer_Healthz(t *testing.T) {
	e := newEnv(t, Config{})
	e.status.ready = false // liveness does not depend on readiness
	w := e.do(t, http.MethodGet, "/healthz", "")
	if w.Code != 200 || w.Body.String() != "ok" {
		t.Fatalf("healthz = %d %q", w.Code, w.Body)
	}
}

func TestServer_Readyz(t *testing.T) {
	cases := []struct {
		name  string
		ready bool
	}{{"ready", true}, {"not ready", false}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.status.ready = tc.ready
			w := e.do(t, http.MethodGet, "/readyz", "")
			if tc.ready {
				if w.Code != 200 || w.Body.String() != "ok" {
					t.Fatalf("readyz = %d %q", w.Code, w.Body)
				}
				return
			}
			if msg := mustErrorBody(t, w, 503, "unavailable"); !msg.Retryable {
				t.Fatal("not-ready error is not retryable")
			}
			if w.Header().Get("Retry-After") == "" {
				t.Fatal("503 without Retry-After")
			}
		})
	}
}

func TestServer_Cluster(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		e := newEnv(t, Config{})
		e.status.st = &ClusterStatus{
			ClusterID: "c1",
			Protocol:  1,
			Nodes:     []NodeStatus{{ID: "n1", Addr: "127.0.0.1:7070", Zone: "z", State: "alive", Replicas: 16, Leaders: 16, Build: "v1.2.0 5bf93d3e0c12", Protocol: 1}},
			Partitions: []PartitionStatus{{ID: 1, Leader: "n1", Replicas: []ReplicaStatus{
				{Node: "n1", Role: "leader", Applied: 10, LagEntries: new(uint64), LagMs: new(int64)},
			}}},
		}
		w := e.do(t, http.MethodGet, "/api/v1/cluster", "")
		if w.Code != 200 {
			t.Fatalf("status %d %s", w.Code, w.Body)
		}
		var got map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want := `{"cluster_id":"c1","moves":[],"nodes":[{"addr":"127.0.0.1:7070","build":"v1.2.0 5bf93d3e0c12","id":"n1","leaders":16,"protocol":1,"replicas":16,"standby":false,"state":"alive","zone":"z"}],"partitions":[{"id":1,"leader":"n1","replicas":[{"applied":10,"lag_entries":0,"lag_ms":0,"node":"n1","role":"leader"}],"under_replicated":false}],"protocol":1}`
		if b, _ := json.Marshal(got); string(b) != want {
			t.Fatalf("body\n%s\nwant\n%s", b, want)
		}
	})
	t.Run("empty", func(t *testing.T) {
		e := newEnv(t, Config{})
		e.status.st = &ClusterStatus{}
		w := e.do(t, http.MethodGet, "/api/v1/cluster", "")
		if !strings.Contains(w.Body.String(), `"nodes":[]`) || !strings.Contains(w.Body.String(), `"moves":[]`) {
			t.Fatalf("empty lists are not []: %s", w.Body)
		}
	})
	t.Run("unavailable", func(t *testing.T) {
		e := newEnv(t, Config{})
		e.status.err = errs.New(errs.Unavailable, "no metadata leader")
		mustErrorBody(t, e.do(t, http.MethodGet, "/api/v1/cluster", ""), 503, "unavailable")
	})
}

func TestServer_WriteError(t *testing.T) {
	cases := []struct {
		name           string
		err            error
		wantStatus     int
		wantCode       string
		wantRetryAfter bool
		wantRetryable  bool
	}{
		{"invalid", errs.New(errs.Invalid, "bad"), 400, "invalid", false, false},
		{"too large", errs.New(errs.TooLarge, "big"), 413, "too_large", false, false},
		{"unauthorized", errs.New(errs.Unauthorized, "who"), 401, "unauthorized", false, false},
		{"forbidden", errs.New(errs.Forbidden, "no"), 403, "forbidden", false, false},
		{"not found", errs.New(errs.NotFound, "gone"), 404, "not_found", false, false},
		{"conflict", errs.New(errs.Conflict, "taken"), 409, "conflict", false, false},
		{"precondition", errs.New(errs.PreconditionFailed, "cas"), 412, "precondition_failed", false, false},
		{"rate limited", errs.New(errs.RateLimited, "slow down"), 429, "rate_limited", true, false},
		{"unavailable", errs.New(errs.Unavailable, "no leader"), 503, "unavailable", true, true},
		{"timeout", errs.New(errs.Timeout, "unknown outcome"), 503, "timeout", true, true},
		{"wrapped", fmt.Errorf("kv: put: %w", errs.New(errs.Unavailable, "no quorum")), 503, "unavailable", true, true},
		{"storage", errs.New(errs.InsufficientStorage, "disk full"), 507, "insufficient_storage", false, false},
		{"upgrade", errs.New(errs.UpgradeInProgress, "old node"), 503, "upgrade_in_progress", true, true},
		{"key reused", errs.New(errs.IdempotencyKeyReused, "other request"), 422, "idempotency_key_reused", false, false},
		{"deadline", fmt.Errorf("propose: %w", context.DeadlineExceeded), 503, "timeout", true, true},
		{"internal code", errs.New(errs.Internal, "secret detail"), 500, "internal", false, false},
		{"plain error", errors.New("secret detail"), 500, "internal", false, false},
		{"unknown code", errs.New("weird", "secret detail"), 500, "internal", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			e := newEnv(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			e.kv.setErr(tc.err)
			w := e.do(t, http.MethodGet, "/api/v1/kv/a", "")
			msg := mustErrorBody(t, w, tc.wantStatus, tc.wantCode)
			if msg.Retryable != tc.wantRetryable {
				t.Fatalf("retryable = %v, want %v", msg.Retryable, tc.wantRetryable)
			}
			if got := w.Header().Get("Retry-After") != ""; got != tc.wantRetryAfter {
				t.Fatalf("Retry-After present = %v, want %v", got, tc.wantRetryAfter)
			}
			if tc.wantStatus == 500 {
				if strings.Contains(w.Body.String(), "secret") {
					t.Fatalf("internal detail leaked: %s", w.Body)
				}
				if !strings.Contains(logs.String(), "secret detail") {
					t.Fatalf("internal error not logged: %q", logs.String())
				}
			} else if logs.Len() != 0 {
				t.Fatalf("a client error was logged: %s", logs.String())
			}
		})
	}
}

func TestServer_NoRoute(t *testing.T) {
	cases := []struct {
		name       string
		method     string
		path       string
		wantStatus int
		wantAllow  string
	}{
		{"unknown path", http.MethodGet, "/api/v2/things", 404, ""},
		{"unknown v1 path", http.MethodGet, "/api/v1/nothing", 404, ""},
		{"wrong method on cluster", http.MethodPost, "/api/v1/cluster", 405, "GET, HEAD"},
		{"put on list", http.MethodPut, "/api/v1/kv", 405, "GET, HEAD"},
		{"post on key", http.MethodPost, "/api/v1/kv/a", 405, "GET, HEAD, PUT, DELETE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			w := e.do(t, tc.method, tc.path, "")
			code := "not_found"
			if tc.wantStatus == 405 {
				code = "invalid"
			}
			mustErrorBody(t, w, tc.wantStatus, code)
			if got := w.Header().Get("Allow"); got != tc.wantAllow {
				t.Fatalf("Allow = %q, want %q", got, tc.wantAllow)
			}
		})
	}
}

func TestServer_Authenticate(t *testing.T) {
	auth := func(r *http.Request) (Identity, error) {
		if r.Header.Get("Authorization") != "Bearer good" {
			return Identity{}, errs.New(errs.Unauthorized, "missing or unknown token")
		}
		return Identity{User: "alice"}, nil
	}
	e := newEnv(t, Config{Authenticate: auth})
	t.Run("refused", func(t *testing.T) {
		for _, m := range []string{http.MethodPut, http.MethodGet, http.MethodDelete} {
			w := e.do(t, m, "/api/v1/kv/a", "v")
			mustErrorBody(t, w, 401, "unauthorized")
			if w.Header().Get("WWW-Authenticate") != "Bearer" {
				t.Fatal("401 without WWW-Authenticate")
			}
		}
		mustErrorBody(t, e.do(t, http.MethodGet, "/api/v1/kv", ""), 401, "unauthorized")
		if c := e.kv.lastCall(); c != "" {
			t.Fatalf("KV was called without a user: %s", c)
		}
	})
	t.Run("user passed on", func(t *testing.T) {
		w := e.do(t, http.MethodPut, "/api/v1/kv/a", "v", "Authorization", "Bearer good", "Idempotency-Key", "k")
		if w.Code != 200 || e.kv.lastCall() != `Put user="alice" key="a" if=0 idem="k"` {
			t.Fatalf("PUT = %d, call %s", w.Code, e.kv.lastCall())
		}
	})
}

func TestServer_Observe(t *testing.T) {
	type obs struct {
		route  string
		status int
	}
	var mu sync.Mutex
	var got []obs
	e := newEnv(t, Config{Observe: func(route string, status int, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if d <= 0 {
			t.Errorf("duration %v", d)
		}
		got = append(got, obs{route, status})
	}})
	e.do(t, http.MethodPut, "/api/v1/kv/a", "v")
	e.do(t, http.MethodGet, "/api/v1/kv/a", "")
	e.do(t, http.MethodGet, "/api/v1/kv/missing", "")
	e.do(t, http.MethodDelete, "/api/v1/kv/a", "")
	e.do(t, http.MethodGet, "/api/v1/kv?limit=x", "")
	e.do(t, http.MethodGet, "/healthz", "")
	e.do(t, http.MethodGet, "/api/v9", "")
	e.do(t, http.MethodGet, "/elsewhere", "")
	want := []obs{
		{"PUT /api/v1/kv/{key...}", 200},
		{"GET /api/v1/kv/{key...}", 200},
		{"GET /api/v1/kv/{key...}", 404},
		{"DELETE /api/v1/kv/{key...}", 204},
		{"GET /api/v1/kv", 400},
		{"GET /healthz", 200},
		{"/api/", 404},
		{"unmatched", 404},
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("observed\n%v\nwant\n%v", got, want)
	}
}

func TestNew_RequiresServices(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New without KV did not panic")
		}
	}()
	New(Config{Status: &fakeStatus{}})
}

func TestServer_Partitions(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		e := newEnv(t, Config{})
		e.status.pm = PartitionMap{Hash: "fnv1a-64", Partitions: 3, Leaders: []string{"10.0.0.1:7070", "", "10.0.0.2:7070"}}
		w := e.do(t, http.MethodGet, "/api/v1/partitions", "")
		want := `{"hash":"fnv1a-64","partitions":3,"leaders":["10.0.0.1:7070","","10.0.0.2:7070"]}`
		if w.Code != 200 || strings.TrimSpace(w.Body.String()) != want {
			t.Fatalf("status %d body %s, want 200 %s", w.Code, w.Body, want)
		}
	})
	t.Run("before the node knows the cluster", func(t *testing.T) {
		e := newEnv(t, Config{})
		e.status.pm = PartitionMap{Hash: "fnv1a-64"}
		w := e.do(t, http.MethodGet, "/api/v1/partitions", "")
		if w.Code != 200 || !strings.Contains(w.Body.String(), `"leaders":[]`) {
			t.Fatalf("status %d body %s: want 200 and leaders []", w.Code, w.Body)
		}
	})
}

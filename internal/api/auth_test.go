package api

import (
	"net/http"
	"testing"
)

// authedRoutes is one request to every route that needs a token.
var authedRoutes = []struct{ method, path, body string }{
	{http.MethodGet, "/api/v1/cluster", ""},
	{http.MethodGet, "/api/v1/kv", ""},
	{http.MethodPut, "/api/v1/kv/k", "v"},
	{http.MethodGet, "/api/v1/kv/k", ""},
	{http.MethodDelete, "/api/v1/kv/k", ""},
	{http.MethodDelete, "/api/v1/sessions/current", ""},
	{http.MethodPost, "/api/v1/rooms", `{"name":"r"}`},
	{http.MethodGet, "/api/v1/rooms", ""},
	{http.MethodDelete, "/api/v1/rooms/r", ""},
	{http.MethodPost, "/api/v1/rooms/r/join", ""},
	{http.MethodPost, "/api/v1/rooms/r/leave", ""},
	{http.MethodPost, "/api/v1/rooms/r/read", `{"seq":1}`},
	{http.MethodGet, "/api/v1/rooms/r/members", ""},
	{http.MethodPost, "/api/v1/rooms/r/messages", `{"text":"hi"}`},
	{http.MethodGet, "/api/v1/rooms/r/messages", ""},
	{http.MethodPost, "/api/v1/queues", `{"name":"q"}`},
	{http.MethodGet, "/api/v1/queues", ""},
	{http.MethodDelete, "/api/v1/queues/q", ""},
	{http.MethodPost, "/api/v1/queues/q/messages", `{"body":"b"}`},
	{http.MethodGet, "/api/v1/queues/q/peek", ""},
	{http.MethodPost, "/api/v1/queues/q/receive", ""},
	{http.MethodPost, "/api/v1/queues/q/ack", `{"receipt":"x"}`},
	{http.MethodPost, "/api/v1/links", `{"url":"https://example.com"}`},
	{http.MethodGet, "/api/v1/links?mine=true", ""},
	{http.MethodGet, "/api/v1/links/abc", ""},
	{http.MethodDelete, "/api/v1/links/abc", ""},
}

func TestAPI_AuthRequired(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	good := e.signUp(t, "alice")
	revoked := e.login(t, "alice")
	if w := e.call(t, revoked, http.MethodDelete, "/api/v1/sessions/current", ""); w.Code != http.StatusNoContent {
		t.Fatalf("logout = %d %s", w.Code, w.Body)
	}
	before := e.stored()
	cases := []struct {
		name    string
		headers []string
	}{
		{"missing", nil},
		{"not bearer", []string{"Authorization", "Basic YWxpY2U6cHc="}},
		{"empty bearer", []string{"Authorization", "Bearer "}},
		{"malformed token", []string{"Authorization", "Bearer not-a-token"}},
		{"unknown token", []string{"Authorization", "Bearer alice.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
		{"revoked token", []string{"Authorization", "Bearer " + revoked}},
		{"over-long token", []string{"Authorization", "Bearer " + string(make([]byte, 600))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, rt := range authedRoutes {
				w := e.do(t, rt.method, rt.path, rt.body, tc.headers...)
				mustErrorBody(t, w, http.StatusUnauthorized, "unauthorized")
				if w.Header().Get("WWW-Authenticate") != "Bearer" {
					t.Fatalf("%s %s: 401 without WWW-Authenticate", rt.method, rt.path)
				}
			}
		})
	}
	if after := e.stored(); after != before {
		t.Fatalf("refused requests changed state: applied %v, then %v", before, after)
	}
	t.Run("public routes need no token", func(t *testing.T) {
		for _, rt := range []struct{ method, path string }{
			{http.MethodGet, "/healthz"}, {http.MethodGet, "/readyz"}, {http.MethodGet, "/s/nothing"},
		} {
			if w := e.do(t, rt.method, rt.path, ""); w.Code == http.StatusUnauthorized {
				t.Fatalf("%s %s = 401", rt.method, rt.path)
			}
		}
	})
	t.Run("a valid token passes", func(t *testing.T) {
		if w := e.call(t, good, http.MethodGet, "/api/v1/rooms", ""); w.Code != http.StatusOK {
			t.Fatalf("GET rooms = %d %s", w.Code, w.Body)
		}
		if w := e.call(t, good, http.MethodPut, "/api/v1/kv/k", "v"); w.Code != http.StatusOK {
			t.Fatalf("PUT kv = %d %s", w.Code, w.Body)
		}
		if w := e.do(t, http.MethodPut, "/api/v1/kv/k", "v", "Authorization", "bearer "+good); w.Code != http.StatusOK {
			t.Fatalf("lower-case scheme: PUT kv = %d %s", w.Code, w.Body)
		}
	})
}

func TestAPI_KVActsAsUser(t *testing.T) {
	// KV with accounts: the signed-in user reaches the service.
	e := newFullEnv(t, envOptions{})
	tok := e.signUp(t, "Alice")
	w := e.call(t, tok, http.MethodPut, "/api/v1/kv/a", "v", "Idempotency-Key", "k")
	if w.Code != http.StatusOK || e.kv.lastCall() != `Put user="Alice" key="a" if=0 idem="k"` {
		t.Fatalf("PUT = %d, call %s", w.Code, e.kv.lastCall())
	}
}

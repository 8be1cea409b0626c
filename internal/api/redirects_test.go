package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// TestServer_Redirects: Redirects in front of Handler answers every request
// as Handler alone does, and Observe sees the same route and status.
func TestServer_Redirects(t *testing.T) {
	links, err := link.NewService(statetest.NewReplicator(4, link.StateMachine{}), link.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, l := range []struct{ code, url string }{
		{"ex", "https://example.com/a?b=c"},
		{"uni", "https://example.com/caf\u00e9?q=\u00fc"},
	} {
		if _, err := links.Create(ctx, "alice", l.url, l.code, "", link.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := links.Create(ctx, "alice", "https://example.com/off", "off", "", link.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := links.Update(ctx, "alice", "off", link.Patch{Disabled: new(true)}); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		route  string
		status int
	}
	var last seen
	srv := New(Config{
		KV: kv.NewService(statetest.NewReplicator(1, kv.StateMachine{}), kv.Limits{}), Status: &fakeStatus{ready: true},
		Links: links, PublicURL: "https://par.ly",
		Observe: func(route string, status int, _ time.Duration) { last = seen{route, status} },
	})
	plain, fast := srv.Handler(), srv.Redirects(srv.Handler())
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/s/ex", http.StatusFound},
		{"HEAD", "/s/ex", http.StatusFound},
		{"GET", "/s/uni", http.StatusFound},
		{"GET", "/s/nope", http.StatusNotFound},
		{"GET", "/s/off", http.StatusGone},
		{"GET", "/s/ex+", http.StatusOK},
		{"GET", "/s/+", http.StatusNotFound},
		{"GET", "/s/e%78", http.StatusFound},
		{"GET", "/s/a.b", http.StatusNotFound},
		{"GET", "/s/ex/more", http.StatusNotFound},
		{"GET", "/s/", http.StatusNotFound},
		{"GET", "/s/../api/v1/kv", http.StatusTemporaryRedirect}, // the mux cleans the path
		{"POST", "/s/ex", http.StatusMethodNotAllowed},
		{"GET", "/healthz", http.StatusOK},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var answers [2]*httptest.ResponseRecorder
			var observed [2]seen
			for i, h := range []http.Handler{plain, fast} {
				answers[i] = httptest.NewRecorder()
				h.ServeHTTP(answers[i], httptest.NewRequest(tc.method, tc.path, nil))
				observed[i], last = last, seen{}
			}
			a, b := answers[0], answers[1]
			if a.Code != tc.status || b.Code != tc.status {
				t.Fatalf("status %d through the mux, %d through Redirects; want %d", a.Code, b.Code, tc.status)
			}
			for _, k := range []string{"Location", "Cache-Control", "Content-Type", "Content-Security-Policy"} {
				if a.Header().Get(k) != b.Header().Get(k) {
					t.Errorf("%s: %q through the mux, %q through Redirects", k, a.Header().Get(k), b.Header().Get(k))
				}
			}
			if tc.status != http.StatusFound && a.Body.String() != b.Body.String() {
				t.Errorf("bodies differ:\n%s\n%s", a.Body, b.Body)
			}
			if observed[0] != observed[1] || observed[1].status != tc.status {
				t.Errorf("observed %+v through the mux, %+v through Redirects", observed[0], observed[1])
			}
		})
	}
	t.Run("location", func(t *testing.T) {
		for path, want := range map[string]string{
			"/s/ex":  "https://example.com/a?b=c",
			"/s/uni": "https://example.com/caf%C3%A9?q=%C3%BC",
		} {
			w := httptest.NewRecorder()
			fast.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
			if got := w.Header().Get("Location"); got != want || w.Header().Get("Cache-Control") != "no-store" || w.Body.Len() != 0 {
				t.Errorf("%s: Location %q (want %q), Cache-Control %q, body %q", path, got, want, w.Header().Get("Cache-Control"), w.Body)
			}
		}
	})
}

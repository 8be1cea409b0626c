package api

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// TestServer_Redirects: Redirects in front of Handler answers every request
// as Handler alone does, and Observe sees the same route and status.
func TestServer_Redirects(t *testing.T) {
	srv, _, observed := redirectTestServer(t)
	plain, fast := srv.Handler(), srv.Redirects(srv.Handler())
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/s/ex", http.StatusFound},
		{"HEAD", "/s/ex", http.StatusFound},
		{"GET", "/s/uni", http.StatusFound},
		{"GET", "/s/perm", http.StatusPermanentRedirect},
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
			var seen [2]observedRequest
			for i, h := range []http.Handler{plain, fast} {
				answers[i] = httptest.NewRecorder()
				h.ServeHTTP(answers[i], httptest.NewRequest(tc.method, tc.path, nil))
				seen[i] = observed()
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
			if seen[0] != seen[1] || seen[1].status != tc.status {
				t.Errorf("observed %+v through the mux, %+v through Redirects", seen[0], seen[1])
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

// TestServer_LinksHandler: the links listener answers a short link as the
// API listener does (status, headers, page, what Observe sees), counts
// each redirect as one visit, and serves nothing else: other paths are
// the not-found page, other methods 405.
func TestServer_LinksHandler(t *testing.T) {
	srv, links, observed := redirectTestServer(t)
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fs := &fasthttp.Server{Handler: srv.LinksHandler(ctx), NoDefaultServerHeader: true, NoDefaultContentType: true}
	go func() { _ = fs.Serve(ln) }()
	t.Cleanup(func() { _ = fs.Shutdown() })
	base := "http://" + ln.Addr().String()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ask := func(t *testing.T, method, path string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}
	api := srv.Handler()
	// Requests of short links, by method and what follows /s/.
	type linkRequest struct {
		method, code string
		status       int
	}
	linkRequests := []linkRequest{
		{"GET", "ex", http.StatusFound},
		{"HEAD", "ex", http.StatusFound},
		{"GET", "uni", http.StatusFound},
		{"GET", "perm", http.StatusPermanentRedirect},
		{"GET", "nope", http.StatusNotFound},
		{"HEAD", "nope", http.StatusNotFound},
		{"GET", "off", http.StatusGone},
		{"GET", "ex+", http.StatusOK},
		{"GET", "e%78", http.StatusFound},
		{"POST", "ex", http.StatusMethodNotAllowed},
	}

	t.Run("as the API listener", func(t *testing.T) {
		for _, tc := range linkRequests {
			path := "/s/" + tc.code
			t.Run(tc.method+" "+path, func(t *testing.T) {
				w := httptest.NewRecorder()
				api.ServeHTTP(w, httptest.NewRequest(tc.method, path, nil))
				want, wantSeen := w.Result(), observed()
				got, body := ask(t, tc.method, path)
				if got.StatusCode != tc.status || want.StatusCode != tc.status {
					t.Fatalf("status %d on the links listener, %d on the API; want %d", got.StatusCode, want.StatusCode, tc.status)
				}
				keys := []string{"Location", "Cache-Control", "Content-Type", "Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy"}
				if tc.status == http.StatusMethodNotAllowed {
					// The API's mux answers in plain text, the links
					// listener with a page (below).
					keys, body = []string{"Allow"}, w.Body.String()
				}
				for _, k := range keys {
					if got.Header.Get(k) != want.Header.Get(k) {
						t.Errorf("%s: %q on the links listener, %q on the API", k, got.Header.Get(k), want.Header.Get(k))
					}
				}
				if tc.method == "GET" && body != w.Body.String() {
					t.Errorf("bodies differ:\n%s\n%s", body, w.Body)
				}
				if s := observed(); s != wantSeen {
					t.Errorf("observed %+v on the links listener, %+v on the API", s, wantSeen)
				}
			})
		}
	})

	t.Run("codes at the root as under /s/", func(t *testing.T) {
		for _, tc := range append(linkRequests,
			linkRequest{"GET", "healthz", http.StatusNotFound}, // a code like any other here
			linkRequest{"GET", "s", http.StatusNotFound},
			linkRequest{"GET", "a.b", http.StatusNotFound},
		) {
			t.Run(tc.method+" /"+tc.code, func(t *testing.T) {
				want, wantBody := ask(t, tc.method, "/s/"+tc.code)
				wantSeen := observed()
				got, body := ask(t, tc.method, "/"+tc.code)
				if got.StatusCode != tc.status || want.StatusCode != tc.status {
					t.Fatalf("status %d at the root, %d under /s/; want %d", got.StatusCode, want.StatusCode, tc.status)
				}
				for _, k := range []string{"Location", "Cache-Control", "Content-Type", "Content-Security-Policy", "Allow"} {
					if got.Header.Get(k) != want.Header.Get(k) {
						t.Errorf("%s: %q at the root, %q under /s/", k, got.Header.Get(k), want.Header.Get(k))
					}
				}
				if body != wantBody {
					t.Errorf("bodies differ:\n%s\n%s", body, wantBody)
				}
				if s := observed(); s != wantSeen {
					t.Errorf("observed %+v at the root, %+v under /s/", s, wantSeen)
				}
			})
		}
	})

	t.Run("each redirect is one visit", func(t *testing.T) {
		if err := links.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		before, err := links.Info(ctx, "uni")
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if resp, _ := ask(t, "GET", "/s/uni"); resp.Header.Get("Location") != "https://example.com/caf%C3%A9?q=%C3%BC" {
				t.Fatalf("Location %q", resp.Header.Get("Location"))
			}
		}
		ask(t, "GET", "/s/uni+") // a preview is no visit
		if err := links.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		after, err := links.Info(ctx, "uni")
		if err != nil {
			t.Fatal(err)
		}
		if after.Hits != before.Hits+3 {
			t.Errorf("hits %d after 3 redirects, from %d", after.Hits, before.Hits)
		}
	})

	t.Run("nothing but short links", func(t *testing.T) {
		for _, tc := range []struct {
			method, path string
			status       int
		}{
			{"GET", "/api/v1/openapi.json", http.StatusNotFound},
			{"GET", "/api/v1/cluster", http.StatusNotFound},
			{"POST", "/api/v1/users", http.StatusNotFound},
			{"GET", "/s/../api/v1/links", http.StatusNotFound},
			{"GET", "/", http.StatusNotFound},
			{"GET", "/s/", http.StatusNotFound},
			{"GET", "/s/a.b", http.StatusNotFound},
			{"DELETE", "/s/ex", http.StatusMethodNotAllowed},
			{"PUT", "/s/ex+", http.StatusMethodNotAllowed},
		} {
			resp, body := ask(t, tc.method, tc.path)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Security-Policy") != pagePolicy {
				t.Errorf("%s %s: %d with CSP %q, want %d and the pages' policy", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Content-Security-Policy"), tc.status)
			}
			if tc.status == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: Allow %q", tc.method, tc.path, resp.Header.Get("Allow"))
			}
			if resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(body, "<h1>") || strings.Contains(body, "<script") {
				t.Errorf("%s %s answered %q", tc.method, tc.path, body)
			}
			if s := observed(); s != (observedRequest{unmatchedRoute, tc.status}) {
				t.Errorf("%s %s: observed %+v", tc.method, tc.path, s)
			}
		}
		// A code in the path is escaped in the page.
		if _, body := ask(t, "GET", "/x%3Cb%3E"); !strings.Contains(body, "x&lt;b&gt;") {
			t.Errorf("not-found page of /x<b>: %q", body)
		}
	})
}

// observedRequest is what Observe was told of a request.
type observedRequest struct {
	route  string
	status int
}

// redirectTestServer returns a Server over links ex, uni (a non-ASCII
// URL), perm (a 308) and off (disabled), and a function returning what
// Observe was last told (and forgetting it).
func redirectTestServer(t *testing.T) (*Server, *link.Service, func() observedRequest) {
	t.Helper()
	links, err := link.NewService(statetest.NewReplicator(4, link.StateMachine{}), link.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, l := range []struct {
		code, url string
		status    int
	}{
		{"ex", "https://example.com/a?b=c", 0},
		{"uni", "https://example.com/caf\u00e9?q=\u00fc", 0},
		{"perm", "https://example.com/p", http.StatusPermanentRedirect},
		{"off", "https://example.com/off", 0},
	} {
		if _, err := links.Create(ctx, "alice", l.url, l.code, "", link.Options{Status: l.status}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := links.Update(ctx, "alice", "off", link.Patch{Disabled: new(true)}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var last observedRequest
	srv := New(Config{
		KV: kv.NewService(statetest.NewReplicator(1, kv.StateMachine{}), kv.Limits{}), Status: &fakeStatus{ready: true},
		Links: links, PublicURL: "https://par.ly",
		Observe: func(route string, status int, _ time.Duration) {
			mu.Lock()
			last = observedRequest{route, status}
			mu.Unlock()
		},
	})
	observed := func() observedRequest {
		mu.Lock()
		defer mu.Unlock()
		o := last
		last = observedRequest{}
		return o
	}
	return srv, links, observed
}

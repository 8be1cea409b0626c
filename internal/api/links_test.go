package api

import (
	"net/http"
	"strings"
	"testing"
)

func TestAPI_Links(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	alice := e.signUp(t, "alice") // admin
	bob := e.signUp(t, "bob")
	carol := e.signUp(t, "carol")

	var l linkJSON
	mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/links", `{"url":"https://example.com/a?b=c","code":"ex"}`), http.StatusCreated, &l)
	if l.Code != "ex" || l.URL != "https://example.com/a?b=c" || l.ShortURL != "https://par.ly/s/ex" || l.CreatedBy != "bob" {
		t.Fatalf("created %+v", l)
	}
	var gen linkJSON
	mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/links", `{"url":"http://example.org","request_id":"l1"}`), http.StatusCreated, &gen)
	if len(gen.Code) != 7 || gen.ShortURL != "https://par.ly/s/"+gen.Code {
		t.Fatalf("generated %+v", gen)
	}
	var retry linkJSON
	mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/links", `{"url":"http://example.org"}`, "Idempotency-Key", "l1"), http.StatusCreated, &retry)
	if retry.Code != gen.Code {
		t.Fatalf("retry made code %s, want %s", retry.Code, gen.Code)
	}

	t.Run("refused", func(t *testing.T) {
		before := e.stored()
		for _, tc := range []struct {
			name, method, path, body string
			status                   int
			code, want               string
		}{
			{"code taken", "POST", "/api/v1/links", `{"url":"https://x.y","code":"ex"}`, 409, "conflict", ""},
			{"ftp", "POST", "/api/v1/links", `{"url":"ftp://x.y/f"}`, 400, "invalid", "url"},
			{"relative", "POST", "/api/v1/links", `{"url":"/local"}`, 400, "invalid", "url"},
			{"javascript", "POST", "/api/v1/links", `{"url":"javascript:alert(1)"}`, 400, "invalid", "url"},
			{"no url", "POST", "/api/v1/links", `{}`, 400, "invalid", "url"},
			{"bad code", "POST", "/api/v1/links", `{"url":"https://x.y","code":"a.b"}`, 400, "invalid", "code"},
			{"long url", "POST", "/api/v1/links", `{"url":"https://x.y/` + strings.Repeat("a", 2048) + `"}`, 413, "too_large", "url"},
			{"huge request", "POST", "/api/v1/links", `{"url":"https://x.y/` + strings.Repeat(`\u0061`, 4096) + `"}`, 413, "too_large", "limit"},
			{"unknown field", "POST", "/api/v1/links", `{"url":"https://x.y","ttl":5}`, 400, "invalid", `"ttl"`},
			{"list not mine", "GET", "/api/v1/links?mine=false", "", 400, "invalid", "mine"},
			{"info missing", "GET", "/api/v1/links/nope", "", 404, "not_found", ""},
			{"delete by another", "DELETE", "/api/v1/links/ex", "", 403, "forbidden", ""},
			{"delete missing", "DELETE", "/api/v1/links/nope", "", 404, "not_found", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				mustError(t, e.call(t, carol, tc.method, tc.path, tc.body), tc.status, tc.code, tc.want)
			})
		}
		if after := e.stored(); after != before {
			t.Fatalf("refused requests changed state: %s, then %s", before, after)
		}
	})
	t.Run("redirect", func(t *testing.T) {
		w := e.do(t, http.MethodGet, "/s/ex", "")
		if w.Code != http.StatusFound || w.Header().Get("Location") != "https://example.com/a?b=c" {
			t.Fatalf("redirect = %d Location %q", w.Code, w.Header().Get("Location"))
		}
		w = e.do(t, http.MethodGet, "/s/nope", "")
		if w.Code != http.StatusNotFound || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || !strings.Contains(w.Body.String(), "Link not found") {
			t.Fatalf("unknown code = %d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
		}
		w = e.do(t, http.MethodGet, "/s/%3Cscript%3E", "")
		if w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), "<script>") {
			t.Fatalf("the 404 page echoes markup: %s", w.Body)
		}
	})
	t.Run("info and mine", func(t *testing.T) {
		var info linkJSON
		mustJSON(t, e.call(t, carol, http.MethodGet, "/api/v1/links/ex", ""), http.StatusOK, &info)
		if info.Code != "ex" || info.CreatedBy != "bob" || info.CreatedAt == 0 {
			t.Fatalf("info %+v", info)
		}
		var mine linksResponse
		mustJSON(t, e.call(t, bob, http.MethodGet, "/api/v1/links?mine=true", ""), http.StatusOK, &mine)
		if len(mine.Links) != 2 {
			t.Fatalf("bob's links %+v", mine.Links)
		}
		mustJSON(t, e.call(t, carol, http.MethodGet, "/api/v1/links", ""), http.StatusOK, &mine)
		if mine.Links == nil || len(mine.Links) != 0 {
			t.Fatalf("carol's links %+v, want []", mine.Links)
		}
	})
	t.Run("delete", func(t *testing.T) {
		if w := e.call(t, bob, http.MethodDelete, "/api/v1/links/ex", ""); w.Code != http.StatusNoContent {
			t.Fatalf("owner delete = %d %s", w.Code, w.Body)
		}
		if w := e.do(t, http.MethodGet, "/s/ex", ""); w.Code != http.StatusNotFound {
			t.Fatalf("deleted link redirects: %d", w.Code)
		}
		if w := e.call(t, alice, http.MethodDelete, "/api/v1/links/"+gen.Code, ""); w.Code != http.StatusNoContent {
			t.Fatalf("admin delete = %d %s", w.Code, w.Body)
		}
	})
}

func TestAPI_ShortURL(t *testing.T) {
	r := newRequest(http.MethodGet, "http://node-3:7070/api/v1/links", "")
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "http://node-3:7070/s/ab1"},
		{Config{PublicURL: "https://par.ly/"}, "https://par.ly/s/ab1"},
		{Config{PublicURL: "https://par.ly", LinksURL: "https://s.example/"}, "https://s.example/ab1"},
	} {
		s := &Server{publicURL: trimSlash(tc.cfg.PublicURL), linksURL: trimSlash(tc.cfg.LinksURL)}
		if got := s.shortURL(r, "ab1"); got != tc.want {
			t.Errorf("%+v: shortURL = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}

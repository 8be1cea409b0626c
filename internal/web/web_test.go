package web

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

// get serves one request through h and returns the response.
func get(t *testing.T, h http.Handler, method, target string, header http.Header) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHandler_ServeHTTP(t *testing.T) {
	h := New(Options{})
	t.Run("root is index.html", func(t *testing.T) {
		res := get(t, h, "GET", "/", nil)
		if res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
		if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
		b := body(t, res)
		if !strings.Contains(b, `<script type="module" src="/js/app.js"></script>`) {
			t.Errorf("index.html does not load the app:\n%s", b)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "connect-src 'self' ws://example.com;") {
			t.Errorf("Content-Security-Policy %q", csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Error("no nosniff")
		}
	})
	for _, tc := range []struct{ path, contentType string }{
		{"/index.html", "text/html; charset=utf-8"},
		{"/style.css", "text/css; charset=utf-8"},
		{"/js/app.js", "text/javascript; charset=utf-8"},
		{"/js/views/room.js", "text/javascript; charset=utf-8"},
		{"/favicon.svg", "image/svg+xml"},
	} {
		t.Run("content type of "+tc.path, func(t *testing.T) {
			res := get(t, h, "GET", tc.path, nil)
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != tc.contentType {
				t.Fatalf("status %d, Content-Type %q; want 200, %q", res.StatusCode, res.Header.Get("Content-Type"), tc.contentType)
			}
			if res.Header.Get("Cache-Control") != "no-cache" || res.Header.Get("ETag") == "" {
				t.Errorf("Cache-Control %q, ETag %q", res.Header.Get("Cache-Control"), res.Header.Get("ETag"))
			}
		})
	}
	t.Run("revalidation by ETag", func(t *testing.T) {
		etag := get(t, h, "GET", "/js/api.js", nil).Header.Get("ETag")
		res := get(t, h, "GET", "/js/api.js", http.Header{"If-None-Match": {etag}})
		if res.StatusCode != http.StatusNotModified || body(t, res) != "" {
			t.Fatalf("status %d with the current ETag, want 304 and no body", res.StatusCode)
		}
		res = get(t, h, "GET", "/js/api.js", http.Header{"If-None-Match": {`"stale"`}})
		if res.StatusCode != 200 {
			t.Fatalf("status %d with a stale ETag, want 200", res.StatusCode)
		}
	})
	t.Run("HEAD has no body", func(t *testing.T) {
		res := get(t, h, "HEAD", "/style.css", nil)
		if res.StatusCode != 200 || body(t, res) != "" || res.Header.Get("Content-Length") == "" {
			t.Fatalf("status %d, Content-Length %q", res.StatusCode, res.Header.Get("Content-Length"))
		}
	})
	t.Run("unknown path", func(t *testing.T) {
		for _, p := range []string{"/nope", "/js/", "/js/missing.js", "/static/index.html"} {
			if res := get(t, h, "GET", p, nil); res.StatusCode != 404 {
				t.Errorf("GET %s: status %d, want 404", p, res.StatusCode)
			}
		}
	})
	t.Run("writes are refused", func(t *testing.T) {
		res := get(t, h, "POST", "/", nil)
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
			t.Fatalf("status %d, Allow %q", res.StatusCode, res.Header.Get("Allow"))
		}
	})
}

func TestWithAPI(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTeapot)
	})
	h := WithAPI(api, Options{})
	for _, tc := range []struct {
		path  string
		toAPI bool
	}{
		{"/api/v1/rooms", true},
		{"/api/v1/no-such-route", true},
		{"/api/v1/stream", true},
		{"/s/abc", true},
		{"/healthz", true},
		{"/readyz", true},
		{"/", false},
		{"/js/app.js", false},
		{"/apiary", false},
		{"/nope", false},
	} {
		res := get(t, h, "GET", tc.path, nil)
		if got := res.StatusCode == http.StatusTeapot; got != tc.toAPI {
			t.Errorf("GET %s: served by the API %v, want %v", tc.path, got, tc.toAPI)
		}
	}
}

// TestStatic_References checks the app is whole: every file index.html and
// the modules name exists, every extension has a content type (New would
// panic otherwise), and nothing is loaded from another origin.
func TestStatic_References(t *testing.T) {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newHandler(sub); err != nil {
		t.Fatal(err)
	}
	htmlRef := regexp.MustCompile(`(?:src|href)="(/[^"]*)"`)
	jsImport := regexp.MustCompile(`(?m)^\s*import\s+(?:[^'"]*\s+from\s+)?'([^']+)'`)
	external := regexp.MustCompile(`(?:src|href)="(?:https?:)?//|url\((?:https?:)?//|import\s*\(?\s*'https?:`)
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		text := string(b)
		if loc := external.FindStringIndex(text); loc != nil {
			t.Errorf("%s loads from another origin: %q", p, text[loc[0]:loc[1]])
		}
		var refs []string
		switch path.Ext(p) {
		case ".html":
			for _, m := range htmlRef.FindAllStringSubmatch(text, -1) {
				refs = append(refs, strings.TrimPrefix(m[1], "/"))
			}
			if strings.Contains(text, "<script>") || strings.Contains(text, " style=") || strings.Contains(text, " onclick=") {
				t.Errorf("%s has inline script or style, which the CSP refuses", p)
			}
		case ".js":
			for _, m := range jsImport.FindAllStringSubmatch(text, -1) {
				refs = append(refs, path.Join(path.Dir(p), m[1]))
			}
		}
		for _, ref := range refs {
			if _, err := fs.Stat(sub, ref); err != nil {
				t.Errorf("%s refers to %s, which is not embedded", p, ref)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStatic_NoMarkupParsing checks the app never parses strings as markup
// (the DOM is built with dom.js, so text from users stays text) and draws
// no emoji, which need an emoji font to show: icons are inline SVG.
func TestStatic_NoMarkupParsing(t *testing.T) {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		t.Fatal(err)
	}
	parsing := regexp.MustCompile(`\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|createContextualFragment|DOMParser|\beval\(|new Function\(`)
	emoji := regexp.MustCompile(`[\x{1F000}-\x{1FAFF}\x{2600}-\x{27BF}\x{FE0F}]`)
	err = fs.WalkDir(sub, "js", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := parsing.FindString(line); m != "" {
				t.Errorf("%s:%d parses markup or code (%s): %s", p, i+1, m, strings.TrimSpace(line))
			}
			if m := emoji.FindString(line); m != "" && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d draws the symbol %q, which may need an emoji font: use an SVG icon", p, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

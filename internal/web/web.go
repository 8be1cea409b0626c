// Package web serves Parley's web app: plain HTML, CSS and JavaScript
// modules embedded in the binary with embed, so every node serves the same
// app with no build step and nothing fetched from elsewhere.
//
// The app is a single page (static/index.html) routed by the URL fragment
// (#/rooms, #/room/NAME, ...), so the server only has to serve files. Every
// response carries a Content-Security-Policy that allows scripts and styles
// from this origin only and connections to the cluster's origins only (the
// app's calls and stream fail over to other members when the page's node is
// down; see csp.go), and an ETag so browsers revalidate cheaply after an
// upgrade instead of running a stale app.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var files embed.FS

// contentTypes fixes the type of every extension the app uses, so it does
// not depend on the host's MIME tables (JavaScript modules are refused by
// browsers when served as text/plain).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
}

// asset is one embedded file ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Options configure a Handler.
type Options struct {
	// Origins returns the cluster's origins besides the page's own, read
	// for every response's Content-Security-Policy: the members' advertised
	// HTTP addresses ("host:port") and configured origins
	// ("https://host:port"). Nil means none: the app connects to its own
	// node only.
	Origins func() []string
}

// Handler serves the embedded app. Create it with New; it is safe for
// concurrent use and holds every file in memory (the app is small).
type Handler struct {
	assets  map[string]asset // by URL path, "/" for index.html
	origins func() []string
}

var _ http.Handler = (*Handler)(nil)

// New returns a Handler over the embedded static files.
func New(o Options) *Handler {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(fmt.Sprintf("web: embedded static files: %v", err)) // cannot happen: embed checked it
	}
	h, err := newHandler(sub)
	if err != nil {
		panic(fmt.Sprintf("web: %v", err))
	}
	h.origins = o.Origins
	return h
}

// newHandler loads every file of fsys.
func newHandler(fsys fs.FS) (*Handler, error) {
	h := &Handler{assets: map[string]asset{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("%s: no content type for its extension", p)
		}
		sum := sha256.Sum256(body)
		h.assets["/"+p] = asset{body: body, contentType: ct, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load static files: %w", err)
	}
	index, ok := h.assets["/index.html"]
	if !ok {
		return nil, fmt.Errorf("static files have no index.html")
	}
	h.assets["/"] = index
	return h, nil
}

// ServeHTTP serves GET and HEAD of the app's files: "/" is index.html; an
// unknown path is a small 404 page. Every answer is revalidated by ETag
// (no-cache), so a node upgraded to a new app is picked up at once.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	var origins []string
	if h.origins != nil {
		origins = h.origins()
	}
	hdr.Set("Content-Security-Policy", ContentSecurityPolicy(r, origins))
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	a, ok := h.assets[r.URL.Path]
	if !ok {
		hdr.Set("Cache-Control", "no-store")
		http.Error(w, "404 page not found; the app is at /", http.StatusNotFound)
		return
	}
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", a.etag)
	if etagMatches(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hdr.Set("Content-Type", a.contentType)
	hdr.Set("Content-Length", fmt.Sprint(len(a.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(a.body) // a write error means the client went away
	}
}

// etagMatches reports whether an If-None-Match header lists etag (or "*").
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "W/"))
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// apiPrefixes are the paths that belong to the HTTP API rather than the app.
var apiPrefixes = []string{"/api/", "/s/"}

// apiPaths are the exact paths that belong to the HTTP API.
var apiPaths = map[string]bool{"/healthz": true, "/readyz": true, "/api": true}

// WithAPI returns a handler that sends the API's paths (/api/..., /s/...,
// /healthz, /readyz) to api and everything else to the app made with o, so
// one listener serves both and unknown /api/ paths keep their JSON 404.
func WithAPI(api http.Handler, o Options) http.Handler {
	app := New(o)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isAPI(r.URL.Path) {
			api.ServeHTTP(w, r)
			return
		}
		app.ServeHTTP(w, r)
	})
}

// isAPI reports whether p is served by the API.
func isAPI(p string) bool {
	if apiPaths[p] {
		return true
	}
	for _, prefix := range apiPrefixes {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

package api

import (
	"html"
	"io"
	"net/http"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/link"
)

// pagePolicy is the Content-Security-Policy of the redirect pages: they
// carry no script, load nothing, and style themselves inline.
const pagePolicy = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// pageHeaders are the headers of every redirect page, on both listeners
// (writePage, and the links listener's fastPage).
var pageHeaders = [...]struct{ key, value string }{
	{"Content-Type", "text/html; charset=utf-8"},
	{"X-Content-Type-Options", "nosniff"},
	{"Cache-Control", "no-store"},
	{"Content-Security-Policy", pagePolicy},
	{"Referrer-Policy", "no-referrer"},
}

// writePage writes one of the redirect pages with status.
func writePage(w http.ResponseWriter, status int, page string) {
	h := w.Header()
	for _, ph := range pageHeaders {
		h.Set(ph.key, ph.value)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, page)
}

// linkPage returns the page answering a short link resolved to to, or err,
// that does not redirect: 404 for an unknown code, 410 for a link that is
// disabled, expired or used up. ok is false for a link that redirects and
// for a lookup that failed otherwise (an error answer).
func linkPage(code string, to link.Redirect, err error) (status int, page string, ok bool) {
	switch {
	case errs.Is(err, errs.NotFound):
		return http.StatusNotFound, notFoundPage(code), true
	case err == nil && to.State != link.StateActive:
		return http.StatusGone, gonePage(code, to.State), true
	}
	return 0, "", false
}

// page wraps the body of a redirect page; title and body must be escaped
// already.
func page(title, body string) string {
	return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>` + title + `</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; padding: 0 1rem; overflow-wrap: anywhere">
` + body + `
</body></html>
`
}

// notFoundPage is the page of an unknown short link.
func notFoundPage(code string) string {
	return page("Link not found", `<h1>Link not found</h1>
<p>There is no short link <code>`+html.EscapeString(clip(code))+`</code>. It may have been deleted, or the address is mistyped.</p>`)
}

// stateReasons say why a link in each state does not redirect.
var stateReasons = map[string]string{
	link.StateDisabled:  "has been disabled by its owner",
	link.StateExpired:   "has expired",
	link.StateExhausted: "has reached its visit limit",
}

// gonePage is the page of a link that does not redirect (410).
func gonePage(code, state string) string {
	return page("Link unavailable", `<h1>Link unavailable</h1>
<p>The short link <code>`+html.EscapeString(clip(code))+`</code> `+html.EscapeString(stateReasons[state])+`.</p>`)
}

// preview serves GET /s/{code}+: a page showing where the link goes, with
// the target as escaped text and a plain link, without redirecting or
// counting a visit.
func (s *Server) preview(w http.ResponseWriter, r *http.Request, code string) {
	l, err := s.links.Info(r.Context(), code)
	if s.pageError(w, r, code, err) {
		return
	}
	writePage(w, http.StatusOK, previewPage(s.linkOf(r, l)))
}

// previewPage shows a link's target; every user-chosen string is escaped.
func previewPage(l linkJSON) string {
	target := html.EscapeString(l.URL)
	state := "This link redirects to:"
	if l.State != link.StateActive {
		state = "This link " + html.EscapeString(stateReasons[l.State]) + ". It pointed to:"
	}
	return page("Where "+html.EscapeString(l.Code)+" goes", `<h1>Short link preview</h1>
<p><code>`+html.EscapeString(l.ShortURL)+`</code></p>
<p>`+state+`</p>
<p style="font-size: 1.2rem"><a href="`+target+`" rel="noopener noreferrer nofollow">`+target+`</a></p>
<p style="color: #666">Created by `+html.EscapeString(l.CreatedBy)+`. Check the address before you follow it.</p>`)
}

// pageError answers a redirect or preview whose lookup failed: the 404
// page for an unknown code, a JSON error otherwise. It reports whether err
// was an error.
func (s *Server) pageError(w http.ResponseWriter, r *http.Request, code string, err error) bool {
	if err == nil {
		return false
	}
	if status, page, ok := linkPage(code, link.Redirect{}, err); ok {
		writePage(w, status, page)
	} else {
		s.writeError(w, r, err)
	}
	return true
}

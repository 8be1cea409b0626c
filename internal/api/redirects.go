package api

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/link"
)

// redirectRoute is the pattern of the redirects, as the mux registers it
// (links.go) and Observe reports it.
const redirectRoute = "GET /s/{code}"

// Redirects returns a handler serving GET and HEAD /s/{code} itself and
// every other request through next. A node puts it in front of everything
// else: a redirect is its most frequent request, and needs none of the
// API's layers (no token, no CORS, no body), so it skips the two muxes
// and the web app's dispatch that stand before the mux's route for it.
// The answer and what Observe sees are those of the route.
//
// The path is taken as the mux takes it: r.URL.Path, its one segment after
// /s/ the code, so a path the mux would clean or redirect (a second
// segment, a dot, an empty code) goes to next unchanged.
func (s *Server) Redirects(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, ok := shortCode(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		r.Pattern = redirectRoute
		if s.observe == nil {
			s.shortLink(w, r, code)
			return
		}
		start := time.Now()
		rec := newRecorder(w, redirectRoute)
		s.shortLink(rec, r, code)
		s.observeDone(rec, start)
	})
}

// shortCode returns the code of a GET or HEAD /s/{code} request whose code
// is one a link can have, with the preview's "+" after it or not.
func shortCode(r *http.Request) (string, bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return "", false
	}
	code, ok := strings.CutPrefix(r.URL.Path, "/s/")
	return code, ok && link.ValidCode(strings.TrimSuffix(code, "+"))
}

// shortLink answers a short link: a redirect with the link's status (302
// unless set) to the long URL; 410 with a small HTML page for a link that
// is disabled, expired or used up, 404 for an unknown code; and the preview
// page for {code}+ (links_pages.go).
func (s *Server) shortLink(w http.ResponseWriter, r *http.Request, code string) {
	if c, ok := strings.CutSuffix(code, "+"); ok {
		s.preview(w, r, c)
		return
	}
	to, err := s.links.Resolve(r.Context(), code, link.Visit{UserAgent: r.Header.Get("User-Agent"), Referer: r.Header.Get("Referer")})
	s.answerLink(w, r, code, to, err)
}

// answerLink answers a short link resolved to to, or err: the redirect,
// the 404 page of an unknown code, the 410 page of a link that does not
// redirect, or the error.
func (s *Server) answerLink(w http.ResponseWriter, r *http.Request, code string, to link.Redirect, err error) {
	if status, page, ok := linkPage(code, to, err); ok {
		writePage(w, status, page)
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeRedirect(w, to.URL, to.Status)
}

// noStore is the Cache-Control of redirects. Browsers may keep a redirect
// (301 and 308 above all) only when told to; no-store makes a deleted or
// edited link change for them too, and every follow count. The slice is
// shared by every response and never modified.
var noStore = []string{"no-store"}

// writeRedirect answers with a redirect to url (an absolute http(s) URL,
// checked when the link was made) and status, without a body: the short
// HTML note http.Redirect adds is for user agents that do not follow
// redirects, which no longer exist. Non-ASCII bytes of url are escaped as
// %XX, as http.Redirect does; the header allocates nothing else.
func writeRedirect(w http.ResponseWriter, url string, status int) {
	h := w.Header()
	h["Cache-Control"] = noStore
	h["Location"] = []string{hexEscapeNonASCII(url)}
	w.WriteHeader(status)
}

// hexEscapeNonASCII returns s with every byte above 0x7F written %XX;
// s itself when there is none.
func hexEscapeNonASCII(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

// recorders keeps recorders for reuse: observing a request allocates none.
var recorders = sync.Pool{New: func() any { return new(recorder) }}

// newRecorder returns a recorder of w, for a request of route until the
// mux says otherwise.
func newRecorder(w http.ResponseWriter, route string) *recorder {
	rec := recorders.Get().(*recorder)
	*rec = recorder{ResponseWriter: w, route: route}
	return rec
}

// observeDone reports the request rec recorded, started at start, to
// Observe, and keeps rec for reuse.
func (s *Server) observeDone(rec *recorder, start time.Time) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	s.observe(rec.route, status, time.Since(start))
	*rec = recorder{}
	recorders.Put(rec)
}

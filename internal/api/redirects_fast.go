package api

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unsafe"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/parley-chat/parley/internal/link"
)

// LinksHandler returns the handler of the links listener (--links): a
// server of short links alone, on fasthttp rather than net/http, for the
// request a node serves most. net/http's own work per request (a goroutine
// watching the connection, four deadlines, the header maps) is most of
// what a redirect costs: a net/http server answering redirects from a map,
// with nothing else to do and the API listener's timeouts, serves half of
// what HAProxy serves from the same map on this project's 2-core machines,
// a fasthttp server 0.95 (docs/BENCHMARKS.md, "A listener for short
// links").
//
// A redirect of an active link, the request that matters for throughput,
// is answered here: the same lookup (LinkService.Resolve, counting the
// visit) and the same headers as writeRedirect. Everything else the
// listener answers goes through the net/http code of the main listener, by
// fasthttpadaptor: the error answer of a lookup that failed, the preview
// of {code}+, and a 404 page for any other path or 405 for another method.
// The 404 and 410 pages of a code that does not redirect are written here
// too, with writePage's headers: a scan of codes pays for its lookups
// (an unknown code is read linearizably), not for the adaptor too. No API
// route is reachable through it: it serves GET and HEAD /s/{code} and
// nothing else, and the same at the root, /{code} and /{code}+, for a
// short domain (Config.LinksURL) whose every path is a short link.
//
// base is the context of the lookups of the fast path, cancelled when the
// node stops: fasthttp's RequestCtx must not outlive its request.
func (s *Server) LinksHandler(base context.Context) fasthttp.RequestHandler {
	other := fasthttpadaptor.NewFastHTTPHandler(s.Redirects(http.HandlerFunc(s.notALink)))
	return func(ctx *fasthttp.RequestCtx) {
		// The request's own bytes, without copies: Resolve copies what it
		// keeps.
		seg, atRoot := linkSegment(ctx.Path())
		code := unsafeString(seg)
		if (!ctx.IsGet() && !ctx.IsHead()) || !link.ValidCode(code) {
			if atRoot {
				// What the API listener serves as /s/{seg}: a preview,
				// another method on a code, or the page of no link.
				ctx.Request.SetRequestURI("/s/" + url.PathEscape(code))
			}
			other(ctx) // a preview, another path or method
			return
		}
		start := ctx.Time() // read by fasthttp as it called the handler
		v := link.Visit{UserAgent: unsafeString(ctx.UserAgent()), Referer: unsafeString(ctx.Referer())}
		to, err := s.links.Resolve(base, code, v)
		if status, page, ok := linkPage(code, to, err); ok {
			fastPage(ctx, status, page)
		} else if err == nil {
			h := &ctx.Response.Header
			h.SetCanonical(headerCacheControl, headerNoStore)
			h.SetCanonical(headerLocation, unsafeBytes(hexEscapeNonASCII(to.URL))) // copied
			ctx.SetStatusCode(to.Status)
		} else {
			fasthttpadaptor.NewFastHTTPHandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s.answerLink(w, r, code, to, err) // the error answer
			})(ctx)
		}
		if s.observe != nil {
			s.observe(redirectRoute, ctx.Response.StatusCode(), time.Since(start))
		}
	}
}

// fastPage answers with one of the redirect pages and status, with
// writePage's headers.
func fastPage(ctx *fasthttp.RequestCtx, status int, page string) {
	for _, ph := range pageHeaders {
		ctx.Response.Header.Set(ph.key, ph.value)
	}
	ctx.SetStatusCode(status)
	ctx.SetBodyString(page)
}

// linkSegment returns what may be a short link's code in a decoded path,
// as shortCode takes it from net/http's: what follows /s/, or the one
// segment of a path /{segment} (atRoot), where the links listener serves
// codes too. It is nil for any other path.
func linkSegment(path []byte) (seg []byte, atRoot bool) {
	if rest, ok := bytes.CutPrefix(path, []byte("/s/")); ok {
		return rest, false
	}
	seg, ok := bytes.CutPrefix(path, []byte("/"))
	if !ok || len(seg) == 0 || bytes.IndexByte(seg, '/') >= 0 {
		return nil, false
	}
	return seg, true
}

// The redirect's header names and Cache-Control value (writeRedirect's), in
// canonical form: SetCanonical neither converts nor normalizes them.
var (
	headerCacheControl = []byte("Cache-Control")
	headerLocation     = []byte("Location")
	headerNoStore      = []byte(noStore[0])
)

// unsafeBytes returns s's bytes without copying them, to be read only (by
// a call that copies them).
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// unsafeString returns b's bytes as a string without copying them: valid
// only while fasthttp keeps the request, that is until the handler
// returns, and only while nothing writes to b. What outlives the request
// must be copied (link.Service.Resolve does).
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// notALink answers, on the links listener, a request that is not for a
// short link: 405 for a method other than GET and HEAD on /s/, the
// not-found page otherwise.
func (s *Server) notALink(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	status := http.StatusNotFound
	if strings.HasPrefix(r.URL.Path, "/s/") && r.Method != http.MethodGet && r.Method != http.MethodHead {
		status = http.StatusMethodNotAllowed
		w.Header().Set("Allow", "GET, HEAD")
		writePage(w, status, page("Method not allowed", `<h1>Method not allowed</h1>
<p>Short links answer GET and HEAD only.</p>`))
	} else {
		writePage(w, status, notFoundPage(strings.TrimPrefix(r.URL.Path, "/s/")))
	}
	if s.observe != nil {
		s.observe(unmatchedRoute, status, time.Since(start))
	}
}

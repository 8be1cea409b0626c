package api

import (
	"net/http"
	"strings"

	"github.com/parley-chat/parley/internal/errs"
)

// CORS: the web app fails over to other nodes when its own is down, so a
// page served by one member calls the API of another. The browser lets it
// read the answers only when they name its origin, and asks first (a
// preflight) for calls with a token or a JSON body. The origins allowed are
// those allowed to open streams (originAllowed): the cluster's advertised
// HTTP addresses and the configured origins. Tokens travel in the
// Authorization header, never in cookies, so no credentials are allowed and
// a foreign page gains nothing it could not do with a token it has.

// corsMaxAge is how long, in seconds, a browser may keep a preflight's
// answer.
const corsMaxAge = "600"

// corsHeaders are the request headers a cross-origin call may send: the
// KV page's conditional writes need If-Match and If-None-Match.
const corsHeaders = "Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match"

// corsExposed are the response headers a cross-origin page may read: the
// KV versions, and Retry-After of 429 and 503 answers.
const corsExposed = "X-Parley-Version, X-Parley-Modified-Ms, X-Parley-Stale-Ms, ETag, Retry-After"

// corsMethods are the methods a cross-origin call may use.
const corsMethods = "GET, POST, PUT, DELETE"

// withCORS answers preflights of the /api/ paths and marks the answers to
// requests from an allowed origin as readable by it; every other request
// goes to next unchanged.
func (s *Server) withCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !strings.HasPrefix(r.URL.Path, "/api/") {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		allowed := s.originAllowed(r)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			s.preflight(w, r, allowed)
			return
		}
		if allowed {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", corsExposed)
		}
		next.ServeHTTP(w, r)
	})
}

// preflight answers a CORS preflight: 204 with the methods and headers
// allowed when the origin is one of the cluster's, else 403 without them
// (the browser then refuses the call).
func (s *Server) preflight(w http.ResponseWriter, r *http.Request, allowed bool) {
	if !allowed {
		s.writeError(w, r, errs.New(errs.Forbidden, "origin %q may not call this node: use the cluster's own address or configure --allowed-origin", r.Header.Get("Origin")))
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
	h.Set("Access-Control-Allow-Methods", corsMethods)
	h.Set("Access-Control-Allow-Headers", corsHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
}

package api

import (
	"net/http"
	"strings"

	"github.com/parley-chat/parley/internal/errs"
)

// probeMethods are the methods tried when telling 405 from 404.
var probeMethods = []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodPatch}

// noRoute serves every /api/ request no other route matched, with a JSON 405
// (and Allow) when the path exists under another method, else a JSON 404.
// Routes are registered with a method and catch-alls without, so a pattern
// with a space is a real route.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range probeMethods {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); strings.Contains(pattern, " ") {
			allowed = append(allowed, m)
			if m == http.MethodGet {
				allowed = append(allowed, http.MethodHead)
			}
		}
	}
	if len(allowed) == 0 {
		s.writeError(w, r, errs.New(errs.NotFound, "no such route: %s", r.URL.Path))
		return
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: errorJSON{
		Code:    errs.Invalid,
		Message: "method " + r.Method + " is not allowed here; allowed: " + strings.Join(allowed, ", "),
	}})
}

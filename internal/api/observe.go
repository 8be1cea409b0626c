package api

import (
	"net/http"
	"time"
)

// unmatchedRoute is the route reported to Observe for requests no pattern
// matched.
const unmatchedRoute = "unmatched"

// recorder remembers the status and route of a response for Observe.
type recorder struct {
	http.ResponseWriter
	status int
	route  string
}

// WriteHeader implements http.ResponseWriter.
func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// observed serves r through the mux and reports it to Observe.
func (s *Server) observed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := newRecorder(w, unmatchedRoute)
	defer s.observeDone(rec, start)
	s.mux.ServeHTTP(rec, r)
}

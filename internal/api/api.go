// Package api serves Parley's HTTP API v1 on a net/http ServeMux. It is the
// only place that turns errs codes into HTTP statuses; domain services reach
// it through small interfaces declared here (KVService, StatusSource).
package api

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/kv"
)

// Config configures a Server. KV and Status are required; every other field
// has a default.
type Config struct {
	// KV serves the /api/v1/kv routes.
	KV KVService
	// Status serves /readyz and /api/v1/cluster.
	Status StatusSource
	// Logger receives internal errors (never shown to users). Default: discard.
	Logger *slog.Logger
	// Authenticate returns the user a request acts for, or an error
	// (typically errs.Unauthorized) that is sent to the client. Default:
	// every request is the anonymous user "".
	Authenticate func(r *http.Request) (user string, err error)
	// Observe, when set, is called once for every request with its route
	// pattern (r.Pattern, or "unmatched"), response status and duration.
	Observe func(route string, status int, d time.Duration)
	// MaxKVValue is the largest PUT /api/v1/kv body accepted, in bytes;
	// larger bodies get 413 before reaching KV. Default kv.DefaultMaxValue.
	MaxKVValue int64
}

// Server is Parley's HTTP API. Create it with New; it is safe for
// concurrent use.
type Server struct {
	kv      KVService
	status  StatusSource
	log     *slog.Logger
	auth    func(r *http.Request) (string, error)
	observe func(route string, status int, d time.Duration)
	maxKV   int64
	mux     *http.ServeMux
	handler http.Handler
}

// New returns a Server for cfg, filling in defaults. It panics when KV or
// Status is nil, a wiring mistake.
func New(cfg Config) *Server {
	if cfg.KV == nil || cfg.Status == nil {
		panic("api: Config.KV and Config.Status are required")
	}
	s := &Server{
		kv:      cfg.KV,
		status:  cfg.Status,
		log:     cfg.Logger,
		auth:    cfg.Authenticate,
		observe: cfg.Observe,
		maxKV:   cfg.MaxKVValue,
		mux:     http.NewServeMux(),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.auth == nil {
		s.auth = anonymous
	}
	if s.maxKV <= 0 {
		s.maxKV = kv.DefaultMaxValue
	}
	s.routes()
	s.handler = s.mux
	if s.observe != nil {
		s.handler = http.HandlerFunc(s.observed)
	}
	return s
}

// Handler returns the http.Handler serving every route.
func (s *Server) Handler() http.Handler { return s.handler }

// routes registers every route. Keep this list in step with PRODUCT.md.
func (s *Server) routes() {
	s.handle("GET /healthz", s.healthz)
	s.handle("GET /readyz", s.readyz)
	s.handle("GET /api/v1/cluster", s.cluster)
	s.handle("GET /api/v1/kv", s.kvList)
	s.handle("PUT /api/v1/kv/{key...}", s.kvPut)
	s.handle("GET /api/v1/kv/{key...}", s.kvGet)
	s.handle("DELETE /api/v1/kv/{key...}", s.kvDelete)
	// Catch-alls without a method answer unknown routes with JSON; the
	// second keeps PUT /api/v1/kv from being redirected to /api/v1/kv/.
	s.handle("/api/", s.noRoute)
	s.handle("/api/v1/kv", s.noRoute)
}

// handle registers h under pattern, recording the pattern for Observe.
func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if rec, ok := w.(*recorder); ok {
			rec.route = r.Pattern
		}
		h(w, r)
	})
}

// anonymous is the default Authenticate: no authentication yet.
func anonymous(*http.Request) (string, error) { return "", nil }

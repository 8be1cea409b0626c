// Package api serves Parley's HTTP API v1 on a net/http ServeMux. It is the
// only place that turns errs codes into HTTP statuses; domain services reach
// it through small interfaces declared here (KVService, AccountService,
// RoomService, QueueService, LinkService, PresenceService, StatusSource).
//
// Every route but GET /healthz, /readyz, /api/v1/openapi.json, POST
// /api/v1/users, POST /api/v1/sessions and GET /s/{code} needs
// "Authorization: Bearer TOKEN"; the signed-in user travels in the
// request's context (IdentityFrom). openapi.json describes every route.
// Request bodies are JSON objects with no unknown fields, each route with
// its own size limit (413 past it); a malformed body or parameter is a 400
// whose message names the field.
package api

import (
	"cmp"
	"log/slog"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/stream"
)

// Config configures a Server. KV and Status are required; every other field
// has a default. A nil domain service leaves its routes out (they answer
// 404), which tests of one domain use.
type Config struct {
	// KV serves the /api/v1/kv routes.
	KV KVService
	// Status serves /readyz, /api/v1/cluster and /api/v1/partitions.
	Status StatusSource
	// Accounts serves /api/v1/users and /api/v1/sessions and checks bearer
	// tokens.
	Accounts AccountService
	// Rooms serves /api/v1/rooms.
	Rooms RoomService
	// Export serves GET /api/v1/rooms/{room}/export (rooms_export.go);
	// nil leaves the route out.
	Export ExportService
	// Hooks serves the incoming webhooks of rooms (hooks.go); nil leaves
	// their routes out.
	Hooks HookService
	// Search serves GET /api/v1/search (search.go); nil leaves the route
	// out.
	Search SearchService
	// Files serves the file routes and posts carrying files (files.go);
	// nil leaves the routes out.
	Files FileService
	// Queues serves /api/v1/queues.
	Queues QueueService
	// Links serves /api/v1/links and the redirects of /s/{code}.
	Links LinkService
	// Presence serves GET /api/v1/users/online.
	Presence PresenceService
	// Admin serves drain and remove of nodes and /api/v1/cluster/events.
	Admin ClusterAdmin
	// Tokens serves /api/v1/cluster/tokens (join tokens, admin only).
	Tokens JoinTokens
	// APITokens serves /api/v1/tokens, the users' personal API tokens
	// (tokens.go); Accounts checks them as bearer tokens.
	APITokens TokenService
	// Audit records logins, logouts, the first admin's registration and
	// every call of an admin-only route. Default: audit.Discard.
	Audit audit.Recorder
	// AuditSource serves GET /api/v1/audit (admin only).
	AuditSource AuditSource
	// PublicURL is the base of short links ("https://example.com"); the
	// short_url of a link is PublicURL + "/s/" + code. Default: the
	// request's own scheme and Host.
	PublicURL string
	// LinksURL, when set, is a short domain's base ("https://s.example")
	// whose root reaches the links listeners (LinksHandler): the short_url
	// of a link is then LinksURL + "/" + code, PublicURL aside.
	LinksURL string
	// Logger receives internal errors (never shown to users). Default: discard.
	Logger *slog.Logger
	// Authenticate, when set, replaces the bearer-token check: it returns
	// who a request acts for, or an error (typically errs.Unauthorized) that
	// is sent to the client. Default: the token is checked by
	// Accounts.Authenticate; without Accounts every request is the
	// anonymous identity (tests of KV alone).
	Authenticate func(r *http.Request) (Identity, error)
	// Observe, when set, is called once for every request with its route
	// pattern (r.Pattern, or "unmatched"), response status and duration.
	Observe func(route string, status int, d time.Duration)
	// MaxKVValue is the largest PUT /api/v1/kv body accepted, in bytes;
	// larger bodies get 413 before reaching KV. Default kv.DefaultMaxValue.
	MaxKVValue int64
	// MaxText, MaxQueueBody and MaxURL are the domain limits the JSON body
	// limits of posts, sends and link creation are derived from (a JSON
	// string may take six bytes per byte of text). Defaults: the domain
	// packages' defaults.
	MaxText, MaxQueueBody, MaxURL int
	// Limiter, when set, enforces the per-user limits of posts, sends,
	// creations, streams and long polls (limits.go). Default: no limits.
	Limiter Limiter
	// Streams serves GET /api/v1/stream (live streams over WebSocket).
	Streams StreamService
	// KVWatch serves kv watches: GET /api/v1/kv/watch and the kv
	// subscriptions of streams. Default: none (the routes answer 404).
	KVWatch KVWatchService
	// StreamOrigins returns the origins, besides the request's own host,
	// that browser pages may open streams from and call the /api/ routes
	// from (CORS, cors.go): the cluster's advertised HTTP addresses
	// ("host:port", any scheme) and configured origins
	// ("https://host:port"). Default: none.
	StreamOrigins func() []string
	// StreamRecheck is how often the token of each open stream is checked
	// again, once per distinct token (stream.DefaultRecheck, 500 ms). With
	// the account service's session cache (CacheTTL, 500 ms by default) a
	// session revoked through another node ends the streams here within
	// CacheTTL + StreamRecheck: 1 s, account.MaxCacheTTL. A logout through
	// this node ends them at once, and an expiry at its time.
	StreamRecheck time.Duration
	// ConsumerLease is how long the node leases each message of a stream
	// consumer at a time, renewing it while the consumer runs, up to the
	// consumer's ack timeout: if the node dies, the messages its consumers
	// held come back within this time (stream_queue_lease.go). 0 means
	// DefaultConsumerLease.
	ConsumerLease time.Duration
	// StreamConnected, when set, is called when a stream connection
	// authenticates; the release it returns (nil ok) is called when the
	// connection ends (presence).
	StreamConnected func(user string) (release func())
	// ClientAddr returns the address a request comes from, the key of the
	// login rate limit. Default: the host of r.RemoteAddr (forwarding
	// headers are not trusted).
	ClientAddr func(r *http.Request) string
}

// Server is Parley's HTTP API. Create it with New; it is safe for
// concurrent use.
type Server struct {
	kv       KVService
	status   StatusSource
	accounts AccountService
	rooms    RoomService
	export   ExportService // the Config's Export (rooms_export.go)
	hooks    HookService   // the Config's Hooks (hooks.go)
	search   SearchService // the Config's Search (search.go)
	files    FileService   // the Config's Files (files.go)
	queues   QueueService
	links    LinkService
	presence PresenceService
	admin    ClusterAdmin
	tokens   JoinTokens
	// apiTokens is the Config's APITokens.
	apiTokens TokenService
	// limitAudits throttles the audit of limit refusals (limits.go).
	limitAudits limitAudits
	// hookGuesses counts wrong webhook secrets per address (hookguess.go).
	hookGuesses hookGuesses
	audit       audit.Recorder
	publicURL   string
	linksURL    string
	log         *slog.Logger
	auth        func(r *http.Request) (Identity, error)
	observe     func(route string, status int, d time.Duration)
	clientIP    func(r *http.Request) string
	maxKV       int64
	limits      bodyLimits
	limiter     Limiter
	mux         *http.ServeMux
	handler     http.Handler
	table       []Route // every registered route, in registration order (routes.go)

	auditSource AuditSource // the Config's AuditSource (audit.go)

	// streams, origins and streamConnected are the Config's Streams,
	// StreamOrigins and StreamConnected (stream.go); guard ends the streams
	// whose session ended (stream_session.go), nil without Streams.
	streams         StreamService
	kvWatch         KVWatchService
	origins         func() []string
	streamConnected func(user string) (release func())
	guard           *stream.Guard
	// consumerLeaseMax is Config.ConsumerLease, its default filled in.
	consumerLeaseMax time.Duration
}

// New returns a Server for cfg, filling in defaults. It panics when KV or
// Status is nil, a wiring mistake.
func New(cfg Config) *Server {
	if cfg.KV == nil || cfg.Status == nil {
		panic("api: Config.KV and Config.Status are required")
	}
	s := &Server{
		kv:        cfg.KV,
		status:    cfg.Status,
		accounts:  cfg.Accounts,
		rooms:     cfg.Rooms,
		export:    cfg.Export,
		hooks:     cfg.Hooks,
		search:    cfg.Search,
		files:     cfg.Files,
		queues:    cfg.Queues,
		links:     cfg.Links,
		presence:  cfg.Presence,
		admin:     cfg.Admin,
		tokens:    cfg.Tokens,
		apiTokens: cfg.APITokens,
		audit:     cfg.Audit,
		publicURL: trimSlash(cfg.PublicURL),
		linksURL:  trimSlash(cfg.LinksURL),
		log:       cfg.Logger,
		auth:      cfg.Authenticate,
		observe:   cfg.Observe,
		clientIP:  cfg.ClientAddr,
		maxKV:     cfg.MaxKVValue,
		limits:    newBodyLimits(cfg.MaxText, cfg.MaxQueueBody, cfg.MaxURL),
		limiter:   cfg.Limiter,
		mux:       http.NewServeMux(),
	}
	s.streams, s.origins, s.streamConnected = cfg.Streams, cfg.StreamOrigins, cfg.StreamConnected
	s.consumerLeaseMax = cmp.Or(cfg.ConsumerLease, DefaultConsumerLease)
	s.kvWatch = cfg.KVWatch
	s.auditSource = cfg.AuditSource
	if s.audit == nil {
		s.audit = audit.Discard
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.streams != nil {
		s.guard = s.newStreamGuard(cfg.StreamRecheck)
	}
	if s.auth == nil {
		s.auth = s.bearer
	}
	if s.clientIP == nil {
		s.clientIP = remoteHost
	}
	if s.maxKV <= 0 {
		s.maxKV = kv.DefaultMaxValue
	}
	s.routes()
	s.handler = s.mux
	if s.observe != nil {
		s.handler = http.HandlerFunc(s.observed)
	}
	s.handler = s.withCORS(s.handler)
	return s
}

// Handler returns the http.Handler serving every route.
func (s *Server) Handler() http.Handler { return s.handler }

// routes registers every route. Keep this list in step with docs/API.md.
func (s *Server) routes() {
	s.handle("GET /healthz", s.healthz)
	s.handle("GET /readyz", s.readyz)
	s.handle("GET /api/v1/openapi.json", s.openapiDoc)
	s.handleAuth("GET /api/v1/cluster", s.cluster)
	s.handleAuth("GET /api/v1/partitions", s.partitions)
	s.opsRoutes()
	s.clusterAdminRoutes()
	s.backupRoutes() // backup.go
	s.tokenRoutes()
	s.auditRoutes()
	s.kvRoutes()
	s.handleAuth("GET /api/v1/kv", s.kvList)
	s.handleAuth("PUT /api/v1/kv/{key...}", s.kvPut)
	s.handleAuth("GET /api/v1/kv/{key...}", s.kvGet)
	s.handleAuth("DELETE /api/v1/kv/{key...}", s.kvDelete)
	if s.accounts != nil {
		s.handle("POST /api/v1/users", s.register)
		s.handle("POST /api/v1/sessions", s.login)
		s.handleSession("DELETE /api/v1/sessions/current", s.logout)
	}
	if s.apiTokens != nil {
		s.apiTokenRoutes() // tokens.go
	}
	if s.presence != nil {
		s.handleAuth("GET /api/v1/users/online", s.usersOnline)
	}
	if s.rooms != nil {
		s.handleAuth("POST /api/v1/rooms", s.roomCreate)
		s.handleAuth("GET /api/v1/rooms", s.roomList)
		s.handleAuth("DELETE /api/v1/rooms/{room}", s.roomDelete)
		s.handleAuth("POST /api/v1/rooms/{room}/join", s.roomJoin)
		s.handleAuth("POST /api/v1/rooms/{room}/leave", s.roomLeave)
		s.handleAuth("POST /api/v1/rooms/{room}/read", s.roomRead)
		s.handleAuth("GET /api/v1/rooms/{room}/members", s.roomMembers)
		s.handleAuth("POST /api/v1/rooms/{room}/messages", s.roomPost)
		s.handleAuth("GET /api/v1/rooms/{room}/messages", s.roomHistory)
		s.messageRoutes()
		s.moderationRoutes() // rooms_mod.go
	}
	if s.export != nil {
		s.handleAuth("GET /api/v1/rooms/{room}/export", s.roomExport)
	}
	if s.hooks != nil {
		s.hookRoutes() // hooks.go
	}
	if s.search != nil {
		s.searchRoutes() // search.go
	}
	if s.files != nil {
		s.fileRoutes() // files.go
	}
	if s.streams != nil {
		s.addRoute("GET /api/v1/stream", InStream, s.streamHandler)
	}
	if s.queues != nil {
		s.handleAuth("POST /api/v1/queues", s.queueCreate)
		s.handleAuth("GET /api/v1/queues", s.queueList)
		s.handleAuth("DELETE /api/v1/queues/{queue}", s.queueDelete)
		s.handleAuth("POST /api/v1/queues/{queue}/messages", s.queueSend)
		s.handleAuth("GET /api/v1/queues/{queue}/peek", s.queuePeek)
		s.handleAuth("POST /api/v1/queues/{queue}/receive", s.queueReceive)
		s.handleAuth("POST /api/v1/queues/{queue}/ack", s.queueAck)
		s.queueRoutes()
	}
	if s.links != nil {
		s.linkRoutes() // links.go
	}
	// Catch-alls without a method answer unknown routes with JSON; the
	// second keeps PUT /api/v1/kv from being redirected to /api/v1/kv/.
	s.handle("/api/", s.noRoute)
	s.handle("/api/v1/kv", s.noRoute)
}

// handle registers h under pattern as a public route (no token needed).
func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.addRoute(pattern, Public, h)
}

// addRoute adds h to the mux under pattern, records the route with its
// access in the table, and notes the pattern on the recorder for Observe.
func (s *Server) addRoute(pattern string, access Access, h http.HandlerFunc) {
	s.addRouteOf(newRoute(pattern, access), h)
}

// addRouteOf is addRoute for a route already made.
func (s *Server) addRouteOf(rt Route, h http.HandlerFunc) {
	s.table = append(s.table, rt)
	s.mux.HandleFunc(rt.Pattern, func(w http.ResponseWriter, r *http.Request) {
		if rec, ok := w.(*recorder); ok {
			rec.route = r.Pattern
		}
		h(w, withFingerprint(r))
	})
}

// handleAuth registers h under pattern behind authentication: h runs only
// for a signed-in request that its token's scopes allow (authorize), whose
// Identity is in its context.
func (s *Server) handleAuth(pattern string, h http.HandlerFunc) {
	s.handleSignedIn(newRoute(pattern, SignedIn), h)
}

// handleSession is handleAuth for a route that only a login session may
// call, never a personal API token (Route.SessionOnly).
func (s *Server) handleSession(pattern string, h http.HandlerFunc) {
	rt := newRoute(pattern, SignedIn)
	rt.Token, rt.SessionOnly = 0, true
	s.handleSignedIn(rt, h)
}

func (s *Server) handleSignedIn(rt Route, h http.HandlerFunc) {
	s.addRouteOf(rt, func(w http.ResponseWriter, r *http.Request) {
		id, err := s.authorize(r, rt)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r.WithContext(withIdentity(r.Context(), id)))
	})
}

// trimSlash drops trailing slashes of a base URL.
func trimSlash(u string) string {
	for len(u) > 0 && u[len(u)-1] == '/' {
		u = u[:len(u)-1]
	}
	return u
}

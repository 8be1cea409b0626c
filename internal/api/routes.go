package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/parley-chat/parley/internal/account"
)

// Access says who may call a route.
type Access int

const (
	// Public routes need no token: health, the API's OpenAPI document,
	// sign-up, sign-in, redirects and the JSON answer to unknown routes.
	Public Access = iota
	// SignedIn routes need a valid session token; what the user may do to
	// a given room, queue or link is then the domain's decision.
	SignedIn
	// AdminOnly routes need a valid session token of an admin; every call
	// is audited (handleAdmin).
	AdminOnly
	// InStream is the stream route: it signs in within its own protocol
	// (the Authorization header or the first frame) and ends a stream whose
	// session ends (stream_session.go).
	InStream
)

// String names the access level as the route matrix and docs do.
func (a Access) String() string {
	switch a {
	case Public:
		return "public"
	case SignedIn:
		return "signed-in"
	case AdminOnly:
		return "admin"
	case InStream:
		return "stream"
	}
	return "unknown"
}

// Route is one registered route: its net/http pattern ("METHOD /path", or
// a bare path for the catch-alls) and who may call it.
type Route struct {
	Pattern string
	Access  Access
	// Token is the level a personal API token needs to call the route
	// (newRoute): read for safe methods and the stream, write for other
	// methods, admin for admin routes; 0 for public routes, which need no
	// token, and for SessionOnly ones.
	Token account.Level
	// SessionOnly routes refuse personal API tokens whatever their scopes:
	// managing tokens and signing out need a login session.
	SessionOnly bool
}

// newRoute returns the route of pattern with access, and the token level
// it needs: the one rule of what each scope may call.
func newRoute(pattern string, access Access) Route {
	rt := Route{Pattern: pattern, Access: access}
	switch access {
	case InStream:
		rt.Token = account.LevelRead
	case AdminOnly:
		rt.Token = account.LevelAdmin
	case SignedIn:
		rt.Token = account.LevelWrite
		if method, _, _ := strings.Cut(pattern, " "); method == http.MethodGet || method == http.MethodHead {
			rt.Token = account.LevelRead
		}
	}
	return rt
}

// Routes returns every route the server registered, in registration order:
// the one table the permission matrix test and the API spec are checked
// against.
func (s *Server) Routes() []Route { return slices.Clone(s.table) }

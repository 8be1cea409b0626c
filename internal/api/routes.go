package api

import "slices"

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
}

// Routes returns every route the server registered, in registration order:
// the one table the permission matrix test and the API spec are checked
// against.
func (s *Server) Routes() []Route { return slices.Clone(s.table) }

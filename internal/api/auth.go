package api

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
)

// Identity is who a request acts for.
type Identity struct {
	// User is the signed-in username as registered; "" for the anonymous
	// identity of a Server without accounts.
	User string
	// Admin is true for administrators.
	Admin bool
	// Token is the bearer token the request carried ("" when none).
	Token string
	// Expires is when the token's session ends, by this process's clock;
	// zero when unknown. Streams end then.
	Expires time.Time
	// TokenID is the id of the personal API token the request carried; ""
	// for a login session.
	TokenID string
	// Scopes are what that token may do (authorize enforces them); nil for
	// a login session, which may do all its user may. Admin is true only
	// for an admin's token that has the admin scope.
	Scopes account.Scopes
}

type identityKey struct{}

func withIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity of the signed-in request whose context
// ctx is (or derives from); ok is false outside one. Services use it to learn
// whether the caller is an admin without reading the user again.
func IdentityFrom(ctx context.Context) (id Identity, ok bool) {
	id, ok = ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// identity returns the identity handleAuth put into r's context.
func identity(r *http.Request) Identity {
	id, _ := IdentityFrom(r.Context())
	return id
}

// maxToken bounds the bearer tokens looked at; longer ones are refused
// without a lookup.
const maxToken = 512

// bearerToken returns the token of "Authorization: Bearer TOKEN"; present is
// false when the header is absent.
func bearerToken(r *http.Request) (token string, present bool, err error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false, nil
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", true, errs.New(errs.Unauthorized, `the Authorization header must be "Bearer TOKEN"`)
	}
	if len(token) > maxToken {
		return "", true, errs.New(errs.Unauthorized, "invalid or expired session token")
	}
	return token, true, nil
}

// bearer is the default Authenticate: the bearer token, checked by the
// account service (anonymous when the Server has none).
func (s *Server) bearer(r *http.Request) (Identity, error) {
	if s.accounts == nil {
		return Identity{}, nil
	}
	token, present, err := bearerToken(r)
	switch {
	case err != nil:
		return Identity{}, err
	case !present:
		return Identity{}, errs.New(errs.Unauthorized, "sign in first: send Authorization: Bearer TOKEN (POST /api/v1/sessions returns one)")
	}
	sess, err := s.accounts.Session(r.Context(), token)
	if err != nil {
		return Identity{}, err
	}
	// The account service counts the time left by its own clock; counting
	// it down from now keeps expiries right whatever clock that is.
	return Identity{
		User: sess.Username, Token: token, Expires: time.Now().Add(sess.Left),
		// An admin's token without the admin scope acts as a plain user,
		// for the admin routes and for the domains' admin overrides alike.
		Admin:   sess.Admin && sess.Scopes.Has(account.LevelAdmin),
		TokenID: sess.TokenID, Scopes: sess.Scopes,
	}, nil
}

// authorize authenticates r and checks that its credentials may call the
// route rt: the one place where personal API token scopes are enforced for
// routes (the stream checks its frames with permit). A refusal by scope is
// errs.Forbidden naming the scopes and what the route needs; the identity
// is returned with it, for the audit.
func (s *Server) authorize(r *http.Request, rt Route) (Identity, error) {
	id, err := s.auth(r)
	if err != nil {
		return Identity{}, err
	}
	if id.Scopes == nil { // a login session
		return id, nil
	}
	if rt.SessionOnly {
		return id, errs.New(errs.Forbidden, "an API token cannot call %s: tokens are managed, and sessions ended, from a signed-in session (parley user login)", rt.Pattern)
	}
	kind, name := "", ""
	if room := r.PathValue("room"); room != "" {
		kind, name = account.KindRoom, room
	} else if q := r.PathValue("queue"); q != "" {
		kind, name = account.KindQueue, q
	} else if room, ok := fileRoom(r); ok { // files.go
		kind, name = account.KindRoom, room
	}
	return id, permit(id, rt.Token, kind, name, rt.Pattern)
}

// permit checks that id's token scopes allow level on the room or queue
// kind/name (kind "": not about one room or queue); what names the request
// in the refusal.
func permit(id Identity, level account.Level, kind, name, what string) error {
	if id.Scopes.Allows(level, kind, name) {
		return nil
	}
	need := "the " + level.String() + " scope"
	if kind != "" {
		need += " or " + account.Scope{Level: level, Kind: kind, Name: ident.Fold(name)}.String()
	}
	return errs.New(errs.Forbidden, "this API token's scopes (%s) do not allow %s: it needs %s",
		strings.Join(id.Scopes.Strings(), ", "), what, need)
}

// optionalIdentity authenticates r when it carries credentials: ok is false
// when it carries none. Bad credentials are an error, not anonymity.
func (s *Server) optionalIdentity(r *http.Request) (id Identity, ok bool, err error) {
	if r.Header.Get("Authorization") == "" {
		return Identity{}, false, nil
	}
	id, err = s.auth(r)
	return id, err == nil, err
}

// remoteHost is the default ClientAddr: the host of r.RemoteAddr.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

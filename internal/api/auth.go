package api

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/errs"
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
	return Identity{User: sess.Username, Admin: sess.Admin, Token: token, Expires: time.Now().Add(sess.Left)}, nil
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

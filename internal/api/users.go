package api

import (
	"cmp"
	"context"
	"net/http"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/errs"
)

// AccountService is what the user and session routes need from accounts.
type AccountService interface {
	Register(ctx context.Context, req account.RegisterRequest) (account.User, error)
	Login(ctx context.Context, username, password, clientAddr string) (account.Session, error)
	Logout(ctx context.Context, token string) error
	// Session checks a bearer token: the session it opens, or
	// errs.Unauthorized.
	Session(ctx context.Context, token string) (account.SessionInfo, error)
}

var _ AccountService = (*account.Service)(nil)

// credentials is the body of POST /api/v1/users and POST /api/v1/sessions.
type credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
	writeMeta
}

// userResponse is the body of a successful registration.
type userResponse struct {
	Username  string `json:"username"`
	Admin     bool   `json:"admin"`
	CreatedAt int64  `json:"created_at"` // Unix ms
}

// sessionResponse is the body of a successful login.
type sessionResponse struct {
	Token     string `json:"token"`
	Username  string `json:"username"`
	ExpiresAt int64  `json:"expires_at"` // Unix ms
}

// register serves POST /api/v1/users: 201. With registration closed only an
// admin (signed in) may create users.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	id, signedIn, err := s.optionalIdentity(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var body credentials
	idem, err := s.decodeWrite(w, r, smallBody, &body, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	u, err := s.accounts.Register(r.Context(), account.RegisterRequest{
		Username:       body.Username,
		Password:       body.Password,
		ClientAddr:     s.clientIP(r),
		ByAdmin:        signedIn && id.Admin,
		IdempotencyKey: idem,
	})
	s.auditRegister(r, id, signedIn, cmp.Or(u.Username, body.Username), u.Admin, err)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, userResponse{Username: u.Username, Admin: u.Admin, CreatedAt: u.CreatedAt.UnixMilli()})
}

// login serves POST /api/v1/sessions: 201 with a token, 401 for bad
// credentials.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var body credentials
	if err := s.decodeJSON(w, r, smallBody, &body, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	sess, err := s.accounts.Login(r.Context(), body.Username, body.Password, s.clientIP(r))
	s.auditSession(r, audit.KindLogin, cmp.Or(sess.Username, body.Username), "", err)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, sessionResponse{Token: sess.Token, Username: sess.Username, ExpiresAt: sess.ExpiresAt.UnixMilli()})
}

// logout serves DELETE /api/v1/sessions/current: 204; the token stops
// working on every node within a second, and the streams it holds open on
// this node end at once (on the others within that second).
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	token := identity(r).Token
	err := s.accounts.Logout(r.Context(), token)
	s.auditSession(r, audit.KindSessionRevoked, identity(r).User, "logout", err)
	if s.guard != nil && (err == nil || errs.CodeOf(err) == errs.Unauthorized) {
		s.guard.Revoke(token)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

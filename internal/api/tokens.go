package api

import (
	"context"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
)

// TokenService is what the /api/v1/tokens routes need: the users' personal
// API tokens (account.Service).
type TokenService interface {
	CreateToken(ctx context.Context, req account.CreateTokenRequest) (account.APIToken, error)
	ListTokens(ctx context.Context, username string) ([]account.APIToken, error)
	RevokeToken(ctx context.Context, username, id string) error
}

var _ TokenService = (*account.Service)(nil)

// apiTokenRoutes registers the personal API token routes. Only a login
// session may call them: a token cannot make, see or revoke tokens, so a
// leaked token cannot mint itself successors (as with GitHub's PATs).
func (s *Server) apiTokenRoutes() {
	s.handleSession("POST /api/v1/tokens", s.apiTokenCreate)
	s.handleSession("GET /api/v1/tokens", s.apiTokenList)
	s.handleSession("DELETE /api/v1/tokens/{id}", s.apiTokenRevoke)
}

// apiTokenRequest is the body of POST /api/v1/tokens.
type apiTokenRequest struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
	// ExpiresIn is the lifetime in seconds; 0 or absent: 90 days.
	ExpiresIn int64 `json:"expires_in"`
}

// apiTokenJSON describes a token; Token, the secret, only in the answer to
// its creation.
type apiTokenJSON struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Username   string   `json:"username"`
	Scopes     []string `json:"scopes"`
	CreatedAt  int64    `json:"created_at"`   // Unix ms
	ExpiresAt  int64    `json:"expires_at"`   // Unix ms
	LastUsedAt *int64   `json:"last_used_at"` // Unix ms; null: never used
	Expired    bool     `json:"expired"`
	Token      string   `json:"token,omitempty"`
}

func apiTokenOf(t account.APIToken, now time.Time) apiTokenJSON {
	j := apiTokenJSON{
		ID: t.ID, Name: t.Name, Username: t.Username, Scopes: t.Scopes.Strings(),
		CreatedAt: t.CreatedAt.UnixMilli(), ExpiresAt: t.ExpiresAt.UnixMilli(),
		Expired: !now.Before(t.ExpiresAt), Token: t.Token,
	}
	if !t.LastUsedAt.IsZero() {
		ms := t.LastUsedAt.UnixMilli()
		j.LastUsedAt = &ms
	}
	return j
}

// maxExpiresIn is the largest expires_in, in seconds.
var maxExpiresIn = int64(account.MaxTokenTTL / time.Second)

// apiTokenCreate serves POST /api/v1/tokens: 201 with the token, shown this
// once. It is not idempotent (the secret is never stored, so a retry
// cannot be answered with it): a retry makes a second token.
func (s *Server) apiTokenCreate(w http.ResponseWriter, r *http.Request) {
	id := identity(r)
	var body apiTokenRequest
	if err := s.decodeJSON(w, r, smallBody, &body, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.ExpiresIn < 0 || body.ExpiresIn > maxExpiresIn {
		s.writeError(w, r, errs.New(errs.Invalid, "expires_in: 1 to %d seconds (365 days); leave it out for 90 days", maxExpiresIn))
		return
	}
	t, err := s.apiTokens.CreateToken(r.Context(), account.CreateTokenRequest{
		Username: id.User, Admin: id.Admin, Name: body.Name, Scopes: body.Scopes,
		TTL: time.Duration(body.ExpiresIn) * time.Second,
	})
	s.auditToken(r, id.User, id.User, "created", t.ID, err)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, apiTokenOf(t, time.Now()))
}

// apiTokenList serves GET /api/v1/tokens[?user=NAME]: the caller's tokens, or
// (admins only) another user's, without their secrets.
func (s *Server) apiTokenList(w http.ResponseWriter, r *http.Request) {
	user, err := apiTokenOwner(r, "list")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := s.apiTokens.ListTokens(r.Context(), user)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	now := time.Now()
	out := make([]apiTokenJSON, len(list))
	for i, t := range list {
		out[i] = apiTokenOf(t, now)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

// apiTokenRevoke serves DELETE /api/v1/tokens/{id}[?user=NAME]: 204; the token
// stops working on every node within a second, like a logout.
func (s *Server) apiTokenRevoke(w http.ResponseWriter, r *http.Request) {
	user, err := apiTokenOwner(r, "revoke")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	err = s.apiTokens.RevokeToken(r.Context(), user, r.PathValue("id"))
	s.auditToken(r, identity(r).User, user, "revoked", r.PathValue("id"), err)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// apiTokenOwner returns whose tokens a request is about: the caller's, or the
// ?user= one's, which only an admin may name unless it is the caller.
func apiTokenOwner(r *http.Request, what string) (string, error) {
	id := identity(r)
	user := r.URL.Query().Get("user")
	if user == "" || ident.EqualFold(user, id.User) {
		return id.User, nil
	}
	if !id.Admin {
		return "", errs.New(errs.Forbidden, "only an admin may %s another user's tokens", what)
	}
	return user, nil
}

// auditToken records the creation or revocation of a personal API token.
func (s *Server) auditToken(r *http.Request, actor, owner, what, tokenID string, err error) {
	e := audit.Event{Kind: audit.KindAPIToken, Outcome: auditOutcome(err), Actor: actor, Remote: s.clientIP(r), Target: owner, Detail: what + " " + tokenID}
	if err != nil {
		e.Detail = what + ": " + string(errs.CodeOf(err))
	}
	s.audit.Record(e)
}

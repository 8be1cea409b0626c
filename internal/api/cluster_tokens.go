package api

import (
	"context"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/text"
)

// JoinTokens manages the cluster's join tokens (admin only): the secrets a
// new node presents to join, each pinned to the cluster CA.
type JoinTokens interface {
	// ListJoinTokens returns the tokens that can still be used, without
	// their secrets.
	ListJoinTokens(ctx context.Context) ([]JoinToken, error)
	// CreateJoinToken makes a token named name, valid for ttl (0: until
	// revoked); the answer's Token is the only time the secret is shown.
	CreateJoinToken(ctx context.Context, name string, ttl time.Duration) (JoinToken, error)
	// RevokeJoinToken makes a token unusable at once; an unknown id is
	// errs.NotFound.
	RevokeJoinToken(ctx context.Context, id string) error
	// RotateJoinTokens makes a new token, revokes every other one and puts
	// a new gossip key in use, returning the new token (shown once).
	RotateJoinTokens(ctx context.Context) (JoinToken, error)
}

// JoinToken describes a join token.
type JoinToken struct {
	ID        string     `json:"id"`
	Name      string     `json:"name,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Token is the whole token (its secret), only in the answer that made
	// it.
	Token string `json:"token,omitempty"`
}

// tokenRequest is the body of POST /api/v1/cluster/tokens.
type tokenRequest struct {
	Name       string `json:"name"`
	TTLSeconds int64  `json:"ttl_seconds"`
}

// maxTokenName bounds a join token's name.
const maxTokenName = 64

// tokenRoutes registers the join token routes.
func (s *Server) tokenRoutes() {
	if s.tokens == nil {
		return
	}
	const what = "manage join tokens"
	s.handleAdmin("GET /api/v1/cluster/tokens", what, s.tokenList)
	s.handleAdmin("POST /api/v1/cluster/tokens", what, s.tokenCreate)
	s.handleAdmin("POST /api/v1/cluster/tokens/rotate", what, s.tokenRotate)
	s.handleAdmin("DELETE /api/v1/cluster/tokens/{id}", what, s.tokenRevoke)
}

// tokenList serves GET /api/v1/cluster/tokens.
func (s *Server) tokenList(w http.ResponseWriter, r *http.Request) {
	ts, err := s.tokens.ListJoinTokens(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if ts == nil {
		ts = []JoinToken{}
	}
	writeJSON(w, http.StatusOK, map[string][]JoinToken{"tokens": ts})
}

// tokenCreate serves POST /api/v1/cluster/tokens: 201 with the token.
func (s *Server) tokenCreate(w http.ResponseWriter, r *http.Request) {
	var req tokenRequest
	if err := s.decodeJSON(w, r, smallBody, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case len(req.Name) > maxTokenName:
		s.writeError(w, r, errs.New(errs.Invalid, "name: at most %d bytes", maxTokenName))
		return
	case req.TTLSeconds < 0 || req.TTLSeconds > 10*365*24*3600:
		s.writeError(w, r, errs.New(errs.Invalid, "ttl_seconds: 0 (until revoked) to ten years"))
		return
	}
	if err := text.Check(req.Name, text.Line); err != nil {
		s.writeError(w, r, errs.New(errs.Invalid, "name: %v", err))
		return
	}
	t, err := s.tokens.CreateJoinToken(r.Context(), req.Name, time.Duration(req.TTLSeconds)*time.Second)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

// tokenRotate serves POST /api/v1/cluster/tokens/rotate.
func (s *Server) tokenRotate(w http.ResponseWriter, r *http.Request) {
	t, err := s.tokens.RotateJoinTokens(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

// tokenRevoke serves DELETE /api/v1/cluster/tokens/{id}.
func (s *Server) tokenRevoke(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.tokens.RevokeJoinToken(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": id, "state": "revoked"})
}

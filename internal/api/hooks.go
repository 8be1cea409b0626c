package api

import (
	"context"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// HookService is what the incoming webhook routes need from chat.
type HookService interface {
	CreateHook(ctx context.Context, user, room, name string, isAdmin bool) (chat.Hook, error)
	Hooks(ctx context.Context, user, room string, isAdmin bool) ([]chat.Hook, error)
	RevokeHook(ctx context.Context, user, room, id string, isAdmin bool) error
	CheckHookPost(req chat.HookPostRequest) error
	AuthHook(ctx context.Context, key, secret string) error
	PostHook(ctx context.Context, req chat.HookPostRequest) (chat.PostResult, error)
	// Outgoing webhooks (outhooks.go).
	CreateOutHook(ctx context.Context, user, room string, req chat.OutHookRequest, isAdmin bool) (chat.OutHook, error)
	OutHooks(ctx context.Context, user, room string, isAdmin bool) ([]chat.OutHook, error)
	DeleteOutHook(ctx context.Context, user, room, id string, isAdmin bool) error
	Deliveries(ctx context.Context, user, room, id string, isAdmin bool) ([]chat.DeliveryAttempt, error)
}

var _ HookService = (*chat.Service)(nil)

// hookRoutes registers the incoming webhook routes: managing a room's
// hooks (its owner or an admin, which chat decides) and the public route a
// hook's URL names, which needs no token: the secret in the URL is the
// credential.
func (s *Server) hookRoutes() {
	s.handleAuth("POST /api/v1/rooms/{room}/hooks", s.hookCreate)
	s.handleAuth("GET /api/v1/rooms/{room}/hooks", s.hookList)
	s.handleAuth("DELETE /api/v1/rooms/{room}/hooks/{id}", s.hookRevoke)
	s.handle("POST /api/v1/hooks/{key}/{secret}", s.hookPost)
	s.outHookRoutes() // outhooks.go
}

// hookCreateRequest is the body of POST /api/v1/rooms/{room}/hooks.
type hookCreateRequest struct {
	// Name is the bot name the hook's posts show.
	Name string `json:"name"`
}

// hookJSON is a hook as the API shows it; URL, with the secret, only in
// the answer to its creation.
type hookJSON struct {
	chat.Hook
	URL string `json:"url,omitempty"`
}

// hookPostRequest is the body of POST /api/v1/hooks/{key}/{secret}: Parley's
// {text} or Slack's incoming webhook payload {text, username}; Slack's
// icon_emoji and icon_url are accepted and ignored.
type hookPostRequest struct {
	Text     string `json:"text"`
	Username string `json:"username,omitempty"`
	Icon     string `json:"icon_emoji,omitempty"`
	IconURL  string `json:"icon_url,omitempty"`
	writeMeta
}

// hookCreate serves POST /api/v1/rooms/{room}/hooks: 201 with the hook and
// its URL, shown this once. Not idempotent, like API tokens: the secret is
// not stored, so a retry makes a second hook.
func (s *Server) hookCreate(w http.ResponseWriter, r *http.Request) {
	var body hookCreateRequest
	if err := s.decodeJSON(w, r, smallBody, &body, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	id := identity(r)
	h, err := s.hooks.CreateHook(r.Context(), id.User, r.PathValue("room"), body.Name, id.Admin)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, hookJSON{Hook: h, URL: s.publicBase(r) + "/api/v1/hooks/" + h.Key + "/" + h.Secret})
}

// hookList serves GET /api/v1/rooms/{room}/hooks: the room's hooks without
// their secrets.
func (s *Server) hookList(w http.ResponseWriter, r *http.Request) {
	id := identity(r)
	list, err := s.hooks.Hooks(r.Context(), id.User, r.PathValue("room"), id.Admin)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]hookJSON, len(list))
	for i, h := range list {
		out[i] = hookJSON{Hook: h}
	}
	writeJSON(w, http.StatusOK, map[string]any{"hooks": out})
}

// hookRevoke serves DELETE /api/v1/rooms/{room}/hooks/{id}: 204; the hook's
// URL stops working at once.
func (s *Server) hookRevoke(w http.ResponseWriter, r *http.Request) {
	id := identity(r)
	if err := s.hooks.RevokeHook(r.Context(), id.User, r.PathValue("room"), r.PathValue("id"), id.Admin); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// hookPost serves POST /api/v1/hooks/{key}/{secret}: 201 {seq,ts,sender}
// with the bot as sender. Order of checks: the payload (400/413 naming the
// problem, nothing posted), the per-address sign-in limit for an address
// that sent a wrong secret lately (429: hookguess.go), the key and secret
// (404 whatever is wrong, compared in constant time), the hook's rate limit (429; the posts limit,
// counted per hook, so guessers cannot spend a hook's budget), then the
// post, which is checked against the hook again when it is applied.
func (s *Server) hookPost(w http.ResponseWriter, r *http.Request) {
	var body hookPostRequest
	idem, err := s.decodeContent(w, r, s.limits.post, &body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req := chat.HookPostRequest{Key: r.PathValue("key"), Secret: r.PathValue("secret"), Text: body.Text, Name: body.Username, IdempotencyKey: idem}
	if err := s.hooks.CheckHookPost(req); err != nil {
		s.writeError(w, r, err)
		return
	}
	addr := s.clientIP(r)
	if err := s.takeHookGuess(r.Context(), addr); err != nil {
		s.auditLimited(addr, ratelimit.LoginsPerAddress, addr)
		s.writeError(w, r, err)
		return
	}
	if err := s.hooks.AuthHook(r.Context(), req.Key, req.Secret); err != nil {
		if errs.Is(err, errs.NotFound) {
			s.hookGuesses.failed(addr, time.Now())
		}
		s.writeError(w, r, err)
		return
	}
	if s.limiter != nil {
		if err := s.limiter.Take(r.Context(), ratelimit.Posts, chat.BotPrefix+req.Key); err != nil {
			s.auditLimited(s.clientIP(r), ratelimit.Posts, chat.BotPrefix+req.Key)
			s.writeError(w, r, err)
			return
		}
	}
	res, err := s.hooks.PostHook(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, res)
}

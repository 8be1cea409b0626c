package api

import (
	"context"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
)

// ModerationService is what the routes about a room's settings, roles,
// invitations and moderation need from chat.
type ModerationService interface {
	Room(ctx context.Context, user, room string, stale bool) (chat.Room, int64, error)
	UpdateSettings(ctx context.Context, user, room string, req chat.SettingsRequest, isAdmin bool, idempotencyKey string) (chat.Room, error)
	SetRole(ctx context.Context, user, room, target, role string, isAdmin bool, idempotencyKey string) (chat.ChangeResult, error)
	Invite(ctx context.Context, user, room, target string, isAdmin, undo bool, idempotencyKey string) (chat.ChangeResult, error)
	Moderate(ctx context.Context, user, room string, req chat.ModerateRequest, isAdmin bool, idempotencyKey string) (chat.ChangeResult, error)
	Moderation(ctx context.Context, user, room string, isAdmin, stale bool) (chat.ModerationLog, int64, error)
	SetLegalHold(ctx context.Context, user, room string, lift, isAdmin bool, idempotencyKey string) (chat.Room, error)
}

var _ ModerationService = (*chat.Service)(nil)

// roomSettingsRequest is the body of PATCH /api/v1/rooms/{room}.
type roomSettingsRequest struct {
	chat.SettingsRequest
	writeMeta
}

// roleRequest is the body of PUT /api/v1/rooms/{room}/members/{user}/role.
type roleRequest struct {
	Role string `json:"role"`
	writeMeta
}

// inviteRequest is the body of POST /api/v1/rooms/{room}/invites.
type inviteRequest struct {
	Username string `json:"username"`
	writeMeta
}

// sanctionRequest is the optional body of a kick, ban or mute: Duration in
// seconds (a ban without one is for good; a mute needs one) and an
// optional Reason.
type sanctionRequest struct {
	Duration int64  `json:"duration,omitempty"`
	Reason   string `json:"reason,omitempty"`
	writeMeta
}

// legalHoldRequest is the optional body of PUT and DELETE
// /api/v1/rooms/{room}/legal-hold.
type legalHoldRequest struct {
	writeMeta
}

// moderationRoutes registers the routes about a room's settings, roles,
// invitations, moderation and legal hold.
func (s *Server) moderationRoutes() {
	s.handleAuth("GET /api/v1/rooms/{room}", s.roomGet)
	s.handleAuth("PATCH /api/v1/rooms/{room}", s.roomSettings)
	s.handleAuth("PUT /api/v1/rooms/{room}/members/{user}/role", s.roomRole)
	s.handleAuth("POST /api/v1/rooms/{room}/members/{user}/kick", s.roomSanction(chat.ActKick))
	s.handleAuth("POST /api/v1/rooms/{room}/members/{user}/ban", s.roomSanction(chat.ActBan))
	s.handleAuth("DELETE /api/v1/rooms/{room}/members/{user}/ban", s.roomSanction(chat.ActUnban))
	s.handleAuth("POST /api/v1/rooms/{room}/members/{user}/mute", s.roomSanction(chat.ActMute))
	s.handleAuth("DELETE /api/v1/rooms/{room}/members/{user}/mute", s.roomSanction(chat.ActUnmute))
	s.handleAuth("POST /api/v1/rooms/{room}/invites", s.roomInvite)
	s.handleAuth("DELETE /api/v1/rooms/{room}/invites/{user}", s.roomUninvite)
	s.handleAuth("GET /api/v1/rooms/{room}/moderation", s.roomModeration)
	s.handleAdmin("PUT /api/v1/rooms/{room}/legal-hold", "place a legal hold", s.roomLegalHold(false))
	s.handleAdmin("DELETE /api/v1/rooms/{room}/legal-hold", "lift a legal hold", s.roomLegalHold(true))
}

// roomLegalHold serves PUT (place) and DELETE (lift, with lift) of
// /api/v1/rooms/{room}/legal-hold, for admins only: 200 with the room. A
// room under hold loses nothing to retention, and its messages cannot be
// edited or deleted nor the room deleted, until the hold is lifted.
func (s *Server) roomLegalHold(lift bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body legalHoldRequest
		idem, err := s.decodeWrite(w, r, smallBody, &body, true)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		id := identity(r)
		room, err := s.rooms.SetLegalHold(r.Context(), id.User, r.PathValue("room"), lift, id.Admin, idem)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, room)
	}
}

// roomGet serves GET /api/v1/rooms/{room}: the room with its settings, for
// anyone who may read it.
func (s *Server) roomGet(w http.ResponseWriter, r *http.Request) {
	stale, err := parseConsistency(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	room, staleMs, err := s.rooms.Room(r.Context(), identity(r).User, r.PathValue("room"), stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	setStale(w, stale, staleMs)
	writeJSON(w, http.StatusOK, room)
}

// roomSettings serves PATCH /api/v1/rooms/{room}: 200 with the room after
// the change. Topic and description are for the owner and moderators, the
// rest for the owner or an admin.
func (s *Server) roomSettings(w http.ResponseWriter, r *http.Request) {
	var body roomSettingsRequest
	idem, err := s.decodeWrite(w, r, smallBody, &body, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id := identity(r)
	room, err := s.rooms.UpdateSettings(r.Context(), id.User, r.PathValue("room"), body.SettingsRequest, id.Admin, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, room)
}

// roomRole serves PUT /api/v1/rooms/{room}/members/{user}/role {role}: 200
// {seq, ts} of the role event (seq 0 when the member had the role already).
// "owner" transfers the ownership.
func (s *Server) roomRole(w http.ResponseWriter, r *http.Request) {
	var body roleRequest
	idem, err := s.decodeWrite(w, r, smallBody, &body, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id := identity(r)
	res, err := s.rooms.SetRole(r.Context(), id.User, r.PathValue("room"), r.PathValue("user"), body.Role, id.Admin, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// roomSanction serves the kick, ban, unban, mute and unmute routes: 200
// {seq, ts} of the moderation event.
func (s *Server) roomSanction(action chat.ModAction) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body sanctionRequest
		idem, err := s.decodeWrite(w, r, smallBody, &body, true)
		if err == nil && (body.Duration < 0 || body.Duration > int64(chat.MaxSanction/time.Second)) {
			err = errs.New(errs.Invalid, "duration must be between 0 and %d seconds", int64(chat.MaxSanction/time.Second))
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		id := identity(r)
		req := chat.ModerateRequest{Target: r.PathValue("user"), Action: action, Duration: time.Duration(body.Duration) * time.Second, Reason: body.Reason}
		res, err := s.rooms.Moderate(r.Context(), id.User, r.PathValue("room"), req, id.Admin, idem)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	}
}

// roomInvite serves POST /api/v1/rooms/{room}/invites {username}: 201 {seq,
// ts} of the invite event (seq 0 when already invited).
func (s *Server) roomInvite(w http.ResponseWriter, r *http.Request) {
	var body inviteRequest
	idem, err := s.decodeWrite(w, r, smallBody, &body, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id := identity(r)
	res, err := s.rooms.Invite(r.Context(), id.User, r.PathValue("room"), body.Username, id.Admin, false, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, res)
}

// roomUninvite serves DELETE /api/v1/rooms/{room}/invites/{user}: 200
// {seq, ts}; 404 when there is no such invitation.
func (s *Server) roomUninvite(w http.ResponseWriter, r *http.Request) {
	id := identity(r)
	res, err := s.rooms.Invite(r.Context(), id.User, r.PathValue("room"), r.PathValue("user"), id.Admin, true, r.Header.Get("Idempotency-Key"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// roomModeration serves GET /api/v1/rooms/{room}/moderation: bans, mutes,
// invitations and the latest moderation events, for the owner, moderators
// and admins.
func (s *Server) roomModeration(w http.ResponseWriter, r *http.Request) {
	stale, err := parseConsistency(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id := identity(r)
	log, staleMs, err := s.rooms.Moderation(r.Context(), id.User, r.PathValue("room"), id.Admin, stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	setStale(w, stale, staleMs)
	writeJSON(w, http.StatusOK, log)
}

package api

import (
	"net/http"

	"github.com/parley-chat/parley/internal/chat"
)

// outHookRoutes registers the outgoing webhook routes of a room: its owner
// or an admin (which chat decides) makes, lists and deletes them and reads
// their delivery logs.
func (s *Server) outHookRoutes() {
	s.handleAuth("POST /api/v1/rooms/{room}/outgoing-hooks", s.outHookCreate)
	s.handleAuth("GET /api/v1/rooms/{room}/outgoing-hooks", s.outHookList)
	s.handleAuth("DELETE /api/v1/rooms/{room}/outgoing-hooks/{id}", s.outHookDelete)
	s.handleAuth("GET /api/v1/rooms/{room}/outgoing-hooks/{id}/deliveries", s.outHookDeliveries)
}

// outHookCreate serves POST /api/v1/rooms/{room}/outgoing-hooks: 201 with
// the hook and its signing secret, shown this once. A URL that may not be
// reached (a private address without the operator's allowance) is 403
// naming the address; a malformed one 400. Not idempotent, like incoming
// hooks: a retry makes a second hook.
func (s *Server) outHookCreate(w http.ResponseWriter, r *http.Request) {
	var body chat.OutHookRequest
	if err := s.decodeJSON(w, r, smallBody, &body, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	id := identity(r)
	h, err := s.hooks.CreateOutHook(r.Context(), id.User, r.PathValue("room"), body, id.Admin)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, h)
}

// outHookList serves GET /api/v1/rooms/{room}/outgoing-hooks: the room's
// outgoing hooks without their secrets.
func (s *Server) outHookList(w http.ResponseWriter, r *http.Request) {
	id := identity(r)
	list, err := s.hooks.OutHooks(r.Context(), id.User, r.PathValue("room"), id.Admin)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"hooks": list})
}

// outHookDelete serves DELETE /api/v1/rooms/{room}/outgoing-hooks/{id}:
// 204; nothing more is delivered to the hook.
func (s *Server) outHookDelete(w http.ResponseWriter, r *http.Request) {
	id := identity(r)
	if err := s.hooks.DeleteOutHook(r.Context(), id.User, r.PathValue("room"), r.PathValue("id"), id.Admin); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// outHookDeliveries serves GET
// /api/v1/rooms/{room}/outgoing-hooks/{id}/deliveries: the hook's recent
// delivery attempts, newest first.
func (s *Server) outHookDeliveries(w http.ResponseWriter, r *http.Request) {
	id := identity(r)
	list, err := s.hooks.Deliveries(r.Context(), id.User, r.PathValue("room"), r.PathValue("id"), id.Admin)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": list})
}

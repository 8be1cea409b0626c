package api

import (
	"context"
	"net/http"
)

// PresenceService is what GET /api/v1/users/online needs from the presence
// layer.
type PresenceService interface {
	// OnlineUsers returns the users online anywhere in the cluster, in
	// case-insensitive name order.
	OnlineUsers(ctx context.Context) ([]string, error)
}

// onlineUser is one entry of GET /api/v1/users/online.
type onlineUser struct {
	Username string `json:"username"`
}

// onlineResponse is the body of GET /api/v1/users/online:
// {"users":[{"username":"alice"},...]}. Entries are objects so that fields
// can be added later without breaking clients.
type onlineResponse struct {
	Users []onlineUser `json:"users"`
}

// usersOnline serves GET /api/v1/users/online: the users with a live
// presence lease on any node. Presence is advisory and read from the
// nearest replicas: a user shows online within a moment of connecting and
// offline at once on a clean disconnect, within 15 s when their node dies.
func (s *Server) usersOnline(w http.ResponseWriter, r *http.Request) {
	users, err := s.presence.OnlineUsers(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := onlineResponse{Users: make([]onlineUser, len(users))}
	for i, u := range users {
		out.Users[i] = onlineUser{Username: u}
	}
	writeJSON(w, http.StatusOK, out)
}

package node

import (
	"context"
	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/presence/tracker"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/chatcmd"
)

// apiRooms is the room service the API serves: chat.Service with presence
// filled in (tracker.Rooms) and posts going through the in-chat commands
// (/put, /get, /del on the KV store).
type apiRooms struct {
	tracker.Rooms
	poster *chatcmd.Poster
}

var (
	_ api.RoomService     = apiRooms{}
	_ api.PresenceService = (*tracker.Tracker)(nil)
)

// Post implements api.RoomService, running an in-chat command first.
func (r apiRooms) Post(ctx context.Context, user, room, text string, to []string, idempotencyKey string) (chat.PostResult, error) {
	return r.poster.Post(ctx, user, room, text, to, idempotencyKey)
}

// apiRooms wraps the services' rooms for the API.
func (n *Node) apiRooms(s *services) apiRooms {
	return apiRooms{
		Rooms:  n.presence.WithRooms(s.rooms),
		poster: chatcmd.NewPoster(s.rooms, s.kv, s.rooms.Config().MaxText),
	}
}

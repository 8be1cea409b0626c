package node

import (
	"context"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/chatcmd"
)

// apiRooms is the room service the API serves: chat.Service with presence
// filled in (presenceRooms) and posts going through the in-chat commands
// (/put, /get, /del on the KV store).
type apiRooms struct {
	presenceRooms
	poster *chatcmd.Poster
}

// Post implements api.RoomService, running an in-chat command first.
func (r apiRooms) Post(ctx context.Context, user, room, text string, to []string, idempotencyKey string) (chat.PostResult, error) {
	return r.poster.Post(ctx, user, room, text, to, idempotencyKey)
}

// apiRooms wraps the services' rooms for the API.
func (n *Node) apiRooms(s *services) apiRooms {
	return apiRooms{
		presenceRooms: n.withPresence(s.rooms),
		poster:        chatcmd.NewPoster(s.rooms, s.kv, s.rooms.Config().MaxText),
	}
}

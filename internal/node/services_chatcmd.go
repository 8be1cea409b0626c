package node

import (
	"context"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/chatcmd"
)

// commandRooms is the room service the API serves: chat.Service with posts
// going through the in-chat commands (/put, /get, /del on the KV store).
type commandRooms struct {
	*chat.Service
	poster *chatcmd.Poster
}

// Post implements api.RoomService, running an in-chat command first.
func (r commandRooms) Post(ctx context.Context, user, room, text string, to []string, idempotencyKey string) (chat.PostResult, error) {
	return r.poster.Post(ctx, user, room, text, to, idempotencyKey)
}

// roomsWithCommands wraps the services' rooms for the API.
func (s *services) roomsWithCommands() commandRooms {
	return commandRooms{Service: s.rooms, poster: chatcmd.NewPoster(s.rooms, s.kv, s.rooms.Config().MaxText)}
}

package node

import (
	"context"
	"slices"
	"time"

	"github.com/parley-chat/parley/internal/presence"
	"github.com/parley-chat/parley/internal/stream"
)

// presenceFrameInterval is how often the node compares the presence of the
// rooms its subscribers follow and sends the changes as presence frames.
const presenceFrameInterval = 2 * time.Second

// presenceFrames sends `presence` frames to the subscribers of every room
// with a feed on this node: every interval it reads the room's members'
// presence (Presence.RoomPresence, stale reads) and sends each change since
// the previous reading. The first reading of a room only sets the baseline:
// a subscriber sees who is online from GET /rooms/{room}/members and
// changes from the stream. Presence frames are outside the seq order.
func (s *streams) presenceFrames(ctx context.Context, p *Presence, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := map[string]map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rooms := s.watchedRooms()
		for room := range last {
			if !slices.Contains(rooms, room) {
				delete(last, room)
			}
		}
		for _, room := range rooms {
			rctx, cancel := context.WithTimeout(ctx, every)
			cur, err := p.RoomPresence(rctx, room)
			cancel()
			if err != nil {
				continue // keep the baseline; try again next time
			}
			if prev, ok := last[room]; ok {
				for _, c := range presence.Changes(prev, cur) {
					s.hub.SendRoom(room, stream.EncodePresence(room, c.Username, c.Online))
				}
			}
			last[room] = cur
		}
	}
}

// watchedRooms returns the rooms with a feed on this node.
func (s *streams) watchedRooms() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rooms := make([]string, 0, len(s.feeds))
	for room := range s.feeds {
		rooms = append(rooms, room)
	}
	return rooms
}

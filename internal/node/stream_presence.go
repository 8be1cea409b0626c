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
// with a feed on this node: every interval it reads who is online in the
// cluster once (Presence.OnlineUsers), then each followed room's members,
// and sends each member's change since the previous reading. The first
// reading of a room only sets the baseline: a subscriber sees who is online
// from GET /rooms/{room}/members and changes from the stream. Presence
// frames are outside the seq order. All reads are stale.
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
		if len(rooms) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		s.presenceRound(rctx, p, rooms, last)
		cancel()
	}
}

// presenceRound is one reading of presenceFrames: the online list once,
// then each room's members; a room whose members cannot be read keeps its
// baseline for the next round.
func (s *streams) presenceRound(ctx context.Context, p *Presence, rooms []string, last map[string]map[string]bool) {
	users, err := p.OnlineUsers(ctx)
	if err != nil {
		return
	}
	online := make(map[string]bool, len(users))
	for _, u := range users {
		online[presence.Fold(u)] = true
	}
	for _, room := range rooms {
		names, err := p.roomMembers(ctx, room)
		if err != nil {
			continue
		}
		cur := make(map[string]bool, len(names))
		for _, name := range names {
			cur[name] = online[presence.Fold(name)]
		}
		if prev, ok := last[room]; ok {
			for _, c := range presence.Changes(prev, cur) {
				s.hub.SendRoom(room, stream.EncodePresence(room, c.Username, c.Online))
			}
		}
		last[room] = cur
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

package tracker

import (
	"context"
	"slices"
	"time"

	"github.com/parley-chat/parley/internal/presence"
	"github.com/parley-chat/parley/internal/stream"
)

// FrameInterval is how often the node compares the presence of the rooms
// its subscribers follow and sends the changes as presence frames.
const FrameInterval = 2 * time.Second

// Followed is what presence frames need from the node's live streams.
type Followed interface {
	// WatchedRooms returns the rooms with subscribers on this node.
	WatchedRooms() []string
	// SendRoom sends a frame to the room's subscribers on this node.
	SendRoom(room string, frame []byte)
}

// Frames sends `presence` frames to the subscribers of every room followed
// on this node, until ctx ends: every interval it reads who is online in
// the cluster once (OnlineUsers), then each followed room's members,
// and sends each member's change since the previous reading. The first
// reading of a room only sets the baseline: a subscriber sees who is online
// from GET /rooms/{room}/members and changes from the stream. Presence
// frames are outside the seq order. All reads are stale.
func (p *Tracker) Frames(ctx context.Context, f Followed, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := map[string]map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rooms := f.WatchedRooms()
		for room := range last {
			if !slices.Contains(rooms, room) {
				delete(last, room)
			}
		}
		if len(rooms) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		p.frameRound(rctx, f, rooms, last)
		cancel()
	}
}

// frameRound is one reading of Frames: the online list once,
// then each room's members; a room whose members cannot be read keeps its
// baseline for the next round.
func (p *Tracker) frameRound(ctx context.Context, f Followed, rooms []string, last map[string]map[string]bool) {
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
				f.SendRoom(room, stream.EncodePresence(room, c.Username, c.Online))
			}
		}
		last[room] = cur
	}
}

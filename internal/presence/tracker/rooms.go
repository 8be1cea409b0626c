package tracker

import (
	"context"
	"log/slog"
	"sync"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/presence"
	"github.com/parley-chat/parley/internal/state"
)

// RoomPresence returns whether each member of room is online, keyed by
// username as the room stores it: a stale read of the room's members, then
// of their leases. A failed read returns an error, never everyone offline.
func (p *Tracker) RoomPresence(ctx context.Context, room string) (map[string]bool, error) {
	names, err := p.roomMembers(ctx, room)
	if err != nil {
		return nil, err
	}
	return p.Online(ctx, names)
}

// roomMembers returns the usernames of room's members (a stale read).
func (p *Tracker) roomMembers(ctx context.Context, room string) ([]string, error) {
	room, err := chat.CanonicalRoom(room)
	if err != nil {
		return nil, err
	}
	var members []chat.Member
	if _, err := p.r.Read(ctx, p.r.PartitionOf(room), true, func(r state.Reader) error {
		var err error
		members, err = chat.Members(r, room)
		return err
	}); err != nil {
		return nil, err
	}
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Username
	}
	return names, nil
}

// Rooms is the rooms service with the presence layer's part filled in: members' online flags and the rooms list's online counts. Everything
// else is chat.Service's. When presence cannot be read the answer keeps
// the chat answer (flags false, counts 0) and the failure is logged: the
// room data is right, only the advisory part is missing.
type Rooms struct {
	*chat.Service
	p   *Tracker
	log *slog.Logger
}

// WithRooms wraps a rooms service with p's presence.
func (p *Tracker) WithRooms(rooms *chat.Service) Rooms {
	return Rooms{Service: rooms, p: p, log: p.log}
}

// Members returns chat's members of room with each one's online flag.
func (pr Rooms) Members(ctx context.Context, user, room string, stale bool) ([]chat.Member, int64, error) {
	members, staleMs, err := pr.Service.Members(ctx, user, room, stale)
	if err != nil || len(members) == 0 {
		return members, staleMs, err
	}
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Username
	}
	on, err := pr.p.Online(ctx, names)
	if err != nil {
		pr.log.Debug("presence of room members unavailable", "room", room, "err", err)
		return members, staleMs, nil
	}
	for i := range members {
		members[i].Online = on[members[i].Username]
	}
	return members, staleMs, nil
}

// List returns chat's rooms list with each room's number of members online:
// the online users (one fan-out), then, only when someone is online, the
// members of the listed rooms (one stale read per partition holding any).
func (pr Rooms) List(ctx context.Context, user string, stale bool) ([]chat.RoomSummary, int64, error) {
	rooms, staleMs, err := pr.Service.List(ctx, user, stale)
	if err != nil || len(rooms) == 0 {
		return rooms, staleMs, err
	}
	if err := pr.countOnline(ctx, rooms); err != nil {
		pr.log.Debug("online counts unavailable", "err", err)
		for i := range rooms {
			rooms[i].Online = 0
		}
	}
	return rooms, staleMs, nil
}

// countOnline sets the Online count of every room.
func (pr Rooms) countOnline(ctx context.Context, rooms []chat.RoomSummary) error {
	users, err := pr.p.OnlineUsers(ctx)
	if err != nil || len(users) == 0 {
		return err
	}
	online := make(map[string]bool, len(users))
	for _, u := range users {
		online[presence.Fold(u)] = true
	}
	byPart := map[uint64][]int{} // partition -> indexes into rooms
	for i, r := range rooms {
		if r.Members > 0 {
			q := pr.p.r.PartitionOf(r.Name)
			byPart[q] = append(byPart[q], i)
		}
	}
	errList := make(chan error, len(byPart))
	var wg sync.WaitGroup
	for q, idx := range byPart {
		wg.Go(func() {
			_, err := pr.p.r.Read(ctx, q, true, func(r state.Reader) error {
				for _, i := range idx {
					members, err := chat.Members(r, rooms[i].Name)
					if errs.Is(err, errs.NotFound) {
						continue // deleted since it was listed
					} else if err != nil {
						return err
					}
					n := 0
					for _, m := range members {
						if online[presence.Fold(m.Username)] {
							n++
						}
					}
					rooms[i].Online = n
				}
				return nil
			})
			errList <- err
		})
	}
	wg.Wait()
	close(errList)
	for err := range errList {
		if err != nil {
			return err
		}
	}
	return nil
}

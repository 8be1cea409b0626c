package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/client"
)

// joinCmd is `/join ROOM`: join ROOM and chat in it, printing its recent
// history. A ROOM that does not exist is created with --create, or after
// the next line answers y to the question asked on a terminal; otherwise
// the chat stays where it is. A private room must be joined first with
// `parley room join`, which asks for its password.
func (s *chatSession) joinCmd(ctx context.Context, args string) (bool, error) {
	room := strings.TrimSpace(args)
	if room == "" || strings.ContainsAny(room, " \t") {
		return false, errors.New("usage: /join ROOM")
	}
	if strings.EqualFold(room, s.room) {
		s.printf("-- already in %s\n", termSafe(s.room))
		return false, nil
	}
	r, err := s.join(ctx, room, "")
	switch {
	case isNotFound(err) && s.create:
		if r, err = s.createRoom(ctx, room); err != nil {
			return false, err
		}
	case isNotFound(err) && s.screen.interactive():
		s.printf("-- there is no room %s. Create it? (y/N)\n", termSafe(room))
		s.confirm = func(ctx context.Context, yes bool) error {
			if !yes {
				s.printf("-- nothing created; still in %s\n", s.where())
				return nil
			}
			r, err := s.createRoom(ctx, room)
			if err != nil {
				return err
			}
			return s.switchTo(ctx, r)
		}
		return false, nil
	case isNotFound(err):
		return false, fmt.Errorf("no room %s; check its name (the chat creates rooms only with --create)", termSafe(room))
	case err != nil:
		if ce, ok := errors.AsType[*client.Error](err); ok && ce.Status == 403 {
			return false, fmt.Errorf("%s; join it first with: parley room join %s", describe(err), termSafe(room))
		}
		return false, err
	}
	return false, s.switchTo(ctx, r)
}

// switchTo makes r, a room just joined, the room chatted in: the events of
// the previous room stop, r's recent history and new events show.
func (s *chatSession) switchTo(ctx context.Context, r client.Room) error {
	if err := s.stopFollow(); err != nil {
		return err
	}
	if err := s.enter(ctx, r); err != nil {
		return err
	}
	s.printf("-- now in %s (%s)\n", termSafe(r.Name), plural(r.Members, "member"))
	s.startFollow(ctx)
	return nil
}

// where names the room chatted in for a notice.
func (s *chatSession) where() string {
	if s.room == "" {
		return "no room"
	}
	return termSafe(s.room)
}

// leave is `/leave`: stop being a member of the room chatted in. The chat
// goes on in no room until /join.
func (s *chatSession) leave(ctx context.Context, _ string) (bool, error) {
	room := s.room
	err := s.do(ctx, true, func(ctx context.Context, c *client.Client) error {
		return c.LeaveRoom(ctx, room)
	})
	if err != nil {
		return false, err
	}
	if err := s.stopFollow(); err != nil {
		return false, err
	}
	s.room = ""
	s.screen.setPrompt("> ")
	s.printf("-- left %s; /join ROOM to chat in another room, /quit to end\n", termSafe(room))
	return false, nil
}

// rooms is `/rooms`: the rooms the user can see.
func (s *chatSession) rooms(ctx context.Context, _ string) (bool, error) {
	var rooms []client.RoomSummary
	err := s.do(ctx, false, func(ctx context.Context, c *client.Client) (err error) {
		rooms, err = c.ListRooms(ctx)
		return err
	})
	if err != nil {
		return false, err
	}
	if len(rooms) == 0 {
		s.printf("-- no rooms yet; /join ROOM creates one\n")
		return false, nil
	}
	s.printf("-- rooms you can see (* you are a member):\n")
	width := 0
	for _, r := range rooms {
		width = max(width, len(termSafe(r.Name)))
	}
	for _, r := range rooms {
		mark, unread := " ", ""
		if r.Member {
			mark = "*"
			if n := r.LastSeq - min(r.LastRead, r.LastSeq); n > 0 {
				unread = fmt.Sprintf(", %d unread", n)
			}
		}
		here := ""
		if strings.EqualFold(r.Name, s.room) {
			here = " (here)"
		}
		s.printf("-- %s %-*s  %s, %d online%s%s\n", mark, width, termSafe(r.Name), plural(r.Members, "member"), r.Online, unread, here)
	}
	return false, nil
}

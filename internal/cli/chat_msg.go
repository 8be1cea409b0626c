package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/parley-chat/parley/client"
)

// chatMessageCommands are the chat's commands about one message, N being
// its seq as the chat shows it (#N).
func chatMessageCommands() []chatCommand {
	return []chatCommand{
		{name: "reply", args: "N TEXT", help: "reply to message #N in its thread", needsIn: true, run: (*chatSession).reply},
		{name: "thread", args: "N", help: "show the thread of message #N", needsIn: true, run: (*chatSession).thread},
		{name: "edit", args: "N TEXT", help: "replace the text of your message #N", needsIn: true, run: (*chatSession).edit},
		{name: "delete", args: "N", help: "delete message #N (yours, or any as a moderator or the owner)", needsIn: true, run: (*chatSession).deleteMsg},
		{name: "react", args: "N EMOJI", help: "react to #N with an emoji or :shortcode: (again: take it back)", needsIn: true, run: (*chatSession).reactCmd},
		{name: "pin", args: "N", help: "pin message #N (again: unpin it)", needsIn: true, run: (*chatSession).pin},
		{name: "pins", help: "the pinned messages of this room", needsIn: true, run: (*chatSession).pins},
	}
}

// seqArg splits "N REST" into a message seq and the rest; usage is the
// error when N is missing or not a seq, or when rest must be given and is
// empty.
func seqArg(args string, needRest bool, usage string) (uint64, string, error) {
	n, rest, _ := strings.Cut(strings.TrimSpace(args), " ")
	rest = strings.TrimSpace(rest)
	seq, err := parseSeq("", n)
	if err != nil || (needRest && rest == "") || (!needRest && rest != "") {
		return 0, "", errors.New("usage: /" + usage)
	}
	return seq, rest, nil
}

// change runs one change of a message and prints when it changed nothing;
// the change itself shows when the feed delivers its event.
func (s *chatSession) change(ctx context.Context, seq uint64, what string, fn func(ctx context.Context, c *client.Client, room string) (client.ChangeResult, error)) error {
	room := s.room
	var res client.ChangeResult
	err := s.do(ctx, true, func(ctx context.Context, c *client.Client) (err error) {
		res, err = fn(ctx, c, room)
		return err
	})
	if err == nil && res.Seq == 0 {
		s.printf("-- #%d: nothing to change (%s)\n", seq, what)
	}
	return err
}

// reply is `/reply N TEXT`.
func (s *chatSession) reply(ctx context.Context, args string) (bool, error) {
	seq, text, err := seqArg(args, true, "reply N TEXT")
	if err != nil {
		return false, err
	}
	room := s.room
	return false, s.do(ctx, true, func(ctx context.Context, c *client.Client) error {
		_, err := c.Post(ctx, room, text, client.PostOptions{ReplyTo: seq})
		return err
	})
}

// edit is `/edit N TEXT`.
func (s *chatSession) edit(ctx context.Context, args string) (bool, error) {
	seq, text, err := seqArg(args, true, "edit N TEXT")
	if err != nil {
		return false, err
	}
	return false, s.change(ctx, seq, "same text", func(ctx context.Context, c *client.Client, room string) (client.ChangeResult, error) {
		return c.Edit(ctx, room, seq, text)
	})
}

// deleteMsg is `/delete N`.
func (s *chatSession) deleteMsg(ctx context.Context, args string) (bool, error) {
	seq, _, err := seqArg(args, false, "delete N")
	if err != nil {
		return false, err
	}
	return false, s.change(ctx, seq, "already deleted", func(ctx context.Context, c *client.Client, room string) (client.ChangeResult, error) {
		return c.DeleteMessage(ctx, room, seq)
	})
}

// reactCmd is `/react N EMOJI`.
func (s *chatSession) reactCmd(ctx context.Context, args string) (bool, error) {
	seq, emoji, err := seqArg(args, true, "react N EMOJI")
	if err != nil {
		return false, err
	}
	return false, s.change(ctx, seq, "", func(ctx context.Context, c *client.Client, room string) (client.ChangeResult, error) {
		return react(ctx, c, room, seq, emoji)
	})
}

// pin is `/pin N`.
func (s *chatSession) pin(ctx context.Context, args string) (bool, error) {
	seq, _, err := seqArg(args, false, "pin N")
	if err != nil {
		return false, err
	}
	return false, s.change(ctx, seq, "", func(ctx context.Context, c *client.Client, room string) (client.ChangeResult, error) {
		return togglePin(ctx, c, room, seq)
	})
}

// thread is `/thread N`.
func (s *chatSession) thread(ctx context.Context, args string) (bool, error) {
	seq, _, err := seqArg(args, false, "thread N")
	if err != nil {
		return false, err
	}
	room := s.room
	var th client.Thread
	err = s.do(ctx, false, func(ctx context.Context, c *client.Client) (err error) {
		th, err = c.Thread(ctx, room, seq, 0, 0)
		return err
	})
	if err != nil {
		return false, err
	}
	s.printf("-- thread of #%d (%s):\n", seq, plural(len(th.Replies), "reply"))
	for _, ev := range append([]client.Event{th.Root}, th.Replies...) {
		s.printf("--   #%d [%s] %s\n", ev.Seq, clock(ev.Ts), eventText(ev))
	}
	return false, nil
}

// pins is `/pins`.
func (s *chatSession) pins(ctx context.Context, _ string) (bool, error) {
	room := s.room
	var pins []client.Event
	err := s.do(ctx, false, func(ctx context.Context, c *client.Client) (err error) {
		pins, err = c.Pins(ctx, room)
		return err
	})
	if err != nil {
		return false, err
	}
	if len(pins) == 0 {
		s.printf("-- no pinned messages in %s\n", termSafe(room))
	}
	for _, ev := range pins {
		s.printf("-- pinned #%d [%s] %s\n", ev.Seq, clock(ev.Ts), eventText(ev))
	}
	return false, nil
}

package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/parley-chat/parley/client"
)

// parseSeq reads a message's seq argument ("42" or "#42").
func parseSeq(path, s string) (uint64, error) {
	seq, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 10, 64)
	if err != nil || seq == 0 {
		return 0, usagef(path, "%q is not a message's seq (a positive number, as #42 in history)", termSafe(s))
	}
	return seq, nil
}

// runRoomChange runs `parley room VERB ROOM SEQ [ARG]`: one change to one
// message, printing what it did.
func runRoomChange(verb, usage, help string, nargs int, do func(ctx context.Context, c *client.Client, room string, seq uint64, arg string) (client.ChangeResult, error)) func(context.Context, *Env, string, []string) error {
	return func(ctx context.Context, e *Env, path string, args []string) error {
		var co clientOptions
		fs := newFlagSet(path, usage+" [flags]", help)
		addClientFlags(fs, &co)
		pos, err := parseClient(fs, &co, e, args, 2+nargs, 2+nargs)
		if err != nil {
			return err
		}
		seq, err := parseSeq(path, pos[1])
		if err != nil {
			return err
		}
		arg := ""
		if nargs > 0 {
			arg = pos[2]
		}
		var res client.ChangeResult
		err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
			res, err = do(ctx, c, pos[0], seq, arg)
			return err
		})
		if err != nil {
			return err
		}
		if res.Seq == 0 {
			fmt.Fprintf(e.Stdout, "#%d: nothing to change (already %s)\n", seq, verb)
			return nil
		}
		fmt.Fprintf(e.Stdout, "%s #%d (event #%d)\n", verb, seq, res.Seq)
		return nil
	}
}

var (
	runRoomEdit = runRoomChange("edited", "ROOM SEQ TEXT", `
Replace the text of your message SEQ (an edit event; the message keeps its
seq and shows when it was edited). Only its author may, within the
server's --edit-window.`, 1, func(ctx context.Context, c *client.Client, room string, seq uint64, text string) (client.ChangeResult, error) {
		return c.Edit(ctx, room, seq, text)
	})
	runRoomDeleteMessage = runRoomChange("deleted", "ROOM SEQ", `
Delete message SEQ: its author, the room's owner or an admin may. Its text
is removed from every replica; history keeps a tombstone.`, 0, func(ctx context.Context, c *client.Client, room string, seq uint64, _ string) (client.ChangeResult, error) {
		return c.DeleteMessage(ctx, room, seq)
	})
	runRoomReact = runRoomChange("reacted to", "ROOM SEQ EMOJI", `
React to message SEQ with EMOJI: one emoji or a :shortcode: such as
:thumbsup:. Reacting again with the same emoji takes the reaction back.`, 1, react)
	runRoomPin = runRoomChange("pinned", "ROOM SEQ", `
Pin message SEQ (any member may; whispers cannot be pinned). Pinning it
again unpins it.`, 0, func(ctx context.Context, c *client.Client, room string, seq uint64, _ string) (client.ChangeResult, error) {
		return togglePin(ctx, c, room, seq)
	})
)

// react adds the caller's reaction, or takes it back when it is there.
func react(ctx context.Context, c *client.Client, room string, seq uint64, emoji string) (client.ChangeResult, error) {
	res, err := c.React(ctx, room, seq, emoji)
	if err == nil && res.Seq == 0 {
		return c.Unreact(ctx, room, seq, emoji)
	}
	return res, err
}

// togglePin pins the message, or unpins it when it is pinned.
func togglePin(ctx context.Context, c *client.Client, room string, seq uint64) (client.ChangeResult, error) {
	res, err := c.Pin(ctx, room, seq)
	if err == nil && res.Seq == 0 {
		return c.Unpin(ctx, room, seq)
	}
	return res, err
}

// runRoomReply is `parley room reply ROOM SEQ TEXT`.
func runRoomReply(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "ROOM SEQ TEXT [flags]", `
Post TEXT as a reply in the thread of message SEQ (a reply to a reply joins
the same thread) and print its seq.`)
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 3, 3)
	if err != nil {
		return err
	}
	seq, err := parseSeq(path, pos[1])
	if err != nil {
		return err
	}
	var res client.PostResult
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		res, err = c.Post(ctx, pos[0], pos[2], client.PostOptions{ReplyTo: seq})
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "posted #%d in the thread of #%d\n", res.Seq, seq)
	return nil
}

// runRoomThread is `parley room thread ROOM SEQ`.
func runRoomThread(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var after uint64
	fs := newFlagSet(path, "ROOM SEQ [flags]", `
Print the thread of message SEQ: the message, then its replies in seq order,
one per line as history prints events.`)
	addClientFlags(fs, &co)
	fs.Uint64Var(&after, "after", 0, "print replies after this `seq`")
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	seq, err := parseSeq(path, pos[1])
	if err != nil {
		return err
	}
	var th client.Thread
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		th, err = c.Thread(ctx, pos[0], seq, after, 0)
		return err
	})
	if err != nil {
		return err
	}
	for _, ev := range append([]client.Event{th.Root}, th.Replies...) {
		fmt.Fprintf(e.Stdout, "#%d %s %s\n", ev.Seq, clock(ev.Ts), eventText(ev))
	}
	return nil
}

// runRoomPins is `parley room pins ROOM`.
func runRoomPins(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "ROOM [flags]", "Print a room's pinned messages in seq order.")
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var pins []client.Event
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		pins, err = c.Pins(ctx, pos[0])
		return err
	})
	if err != nil {
		return err
	}
	if len(pins) == 0 {
		fmt.Fprintf(e.Stdout, "no pinned messages in %s\n", termSafe(pos[0]))
	}
	for _, ev := range pins {
		fmt.Fprintf(e.Stdout, "#%d %s %s\n", ev.Seq, clock(ev.Ts), eventText(ev))
	}
	return nil
}

// runRoomMentions is `parley room mentions`.
func runRoomMentions(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var after string
	var limit int
	fs := newFlagSet(path, "[flags]", `
Print the messages that mention you (@you, @here while you were online,
@room) across your rooms, oldest first: the latest --limit, or with --after
the ones after that cursor (printed last as "next: CURSOR").`)
	addClientFlags(fs, &co)
	fs.StringVar(&after, "after", "", "print mentions after this `cursor`")
	fs.IntVar(&limit, "limit", 0, "at most `n` mentions (0: the server's default)")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	var page client.MentionsPage
	err := callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		page, err = c.Mentions(ctx, after, limit)
		return err
	})
	if err != nil {
		return err
	}
	for _, ev := range page.Mentions {
		fmt.Fprintf(e.Stdout, "%s #%d %s %s\n", termSafe(ev.Room), ev.Seq, clock(ev.Ts), eventText(ev))
	}
	if page.Next != "" {
		fmt.Fprintf(e.Stdout, "next: %s\n", termSafe(page.Next))
	}
	return nil
}

// messageNotes describes a message's state after its text: edited,
// reply, reactions, pin, replies.
func messageNotes(ev client.Event) string {
	var b strings.Builder
	if ev.EditedAt != 0 {
		b.WriteString(" (edited)")
	}
	if ev.ReplyTo != 0 {
		fmt.Fprintf(&b, " [reply to #%d]", ev.ReplyTo)
	}
	if ev.ReplyCount != 0 {
		fmt.Fprintf(&b, " [%s]", plural(int(ev.ReplyCount), "reply"))
	}
	for _, r := range ev.Reactions {
		fmt.Fprintf(&b, " [%s %d]", termSafe(r.Emoji), r.Count)
	}
	if ev.Pinned {
		b.WriteString(" [pinned]")
	}
	for _, f := range ev.Files {
		fmt.Fprintf(&b, " [file %s: %s, %s]", termSafe(f.ID), termSafe(f.Name), byteSize(uint64(f.Size)))
	}
	return b.String()
}

// changeText describes a change to a message ("" for other events).
func changeText(ev client.Event) string {
	sender := termSafe(ev.Sender)
	target := fmt.Sprintf("#%d", ev.Target)
	switch ev.Kind {
	case "edit":
		text := ""
		if ev.Message != nil {
			text = ": " + termSafeLines(ev.Message.Text)
		}
		return "* " + sender + " edited " + target + text
	case "delete":
		return "* " + sender + " deleted " + target
	case "react":
		return "* " + sender + " reacted " + termSafe(ev.Emoji) + " to " + target
	case "unreact":
		return "* " + sender + " took back " + termSafe(ev.Emoji) + " on " + target
	case "pin":
		return "* " + sender + " pinned " + target
	case "unpin":
		return "* " + sender + " unpinned " + target
	}
	return ""
}

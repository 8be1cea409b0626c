package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/parley-chat/parley/client"
)

// runRoomCreate is `parley room create NAME`.
func runRoomCreate(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var spec client.RoomSpec
	var fromStdin bool
	fs := newFlagSet(path, "NAME [flags]", `
Create a room owned by you; you become its first member. A private room
needs a password to join: it is read from the terminal, or with
--password-stdin from the first line of standard input.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&spec.Private, "private", false, "make the room private: joining needs its password")
	fs.BoolVar(&spec.InviteOnly, "invite-only", false, "make the room private without a password: only invited users join (parley room invite)")
	fs.BoolVar(&fromStdin, "password-stdin", false, "read the private room's password from the first line of standard input")
	fs.IntVar(&spec.MaxMembers, "max-members", 0, "most `members` the room admits (0: the server's default)")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	if fromStdin && !spec.Private {
		return usagef(path, "--password-stdin needs --private: public rooms have no password")
	}
	if spec.InviteOnly && (spec.Private || fromStdin) {
		return usagef(path, "--invite-only rooms are private without a password: drop --private and --password-stdin")
	}
	if spec.MaxMembers < 0 {
		return usagef(path, "--max-members %d: must not be negative", spec.MaxMembers)
	}
	spec.Name = pos[0]
	if spec.Private {
		if spec.Password, err = readPassword(e, path, "room "+spec.Name, fromStdin, true); err != nil {
			return err
		}
	}
	var r client.Room
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		r, err = c.CreateRoom(ctx, spec)
		return err
	})
	if err != nil {
		return err
	}
	kind := "public"
	switch {
	case r.InviteOnly:
		kind = "invitation-only"
	case r.Private:
		kind = "private"
	}
	fmt.Fprintf(e.Stdout, "created %s room %s\n", kind, termSafe(r.Name))
	return nil
}

// runRoomDelete is `parley room delete NAME`.
func runRoomDelete(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "NAME [flags]", "Delete a room with its history (its owner or an admin may).")
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) error {
		return c.DeleteRoom(ctx, pos[0])
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "deleted room %s\n", termSafe(pos[0]))
	return nil
}

// runRoomList is `parley room list`.
func runRoomList(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var asJSON bool
	fs := newFlagSet(path, "[flags]", `
List the rooms you can see (public ones and the private ones you belong to)
with their members, members online, and your unread events. A '*' before a
name marks the rooms you are a member of.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&asJSON, "json", false, "print the rooms as JSON, as GET /api/v1/rooms returns them")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	var rooms []client.RoomSummary
	err := callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		rooms, err = c.ListRooms(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSONList(e.Stdout, rooms)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ROOM\tACCESS\tMEMBERS\tONLINE\tUNREAD\tLAST SEQ\tOWNER")
	for _, r := range rooms {
		mark, access, unread := " ", "public", "-"
		if r.Member {
			mark, unread = "*", fmt.Sprint(r.LastSeq-min(r.LastRead, r.LastSeq))
		}
		if r.Private {
			access = "private"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%d\t%d\t%s\t%d\t%s\n", mark, termSafe(r.Name), access, r.Members, r.Online, unread, r.LastSeq, termSafe(r.Owner))
	}
	return tw.Flush()
}

// runRoomJoin is `parley room join NAME`.
func runRoomJoin(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var fromStdin bool
	fs := newFlagSet(path, "NAME [flags]", `
Become a member of a room. A private room asks for its password on the
terminal, or takes it with --password-stdin from the first line of standard
input. Joining a room you are in changes nothing.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&fromStdin, "password-stdin", false, "read the room's password from the first line of standard input")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	password := ""
	if fromStdin {
		if password, err = readPassword(e, path, "room "+pos[0], true, false); err != nil {
			return err
		}
	}
	r, err := joinRoom(ctx, e, &co, path, pos[0], password)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "joined %s (%s)\n", termSafe(r.Name), plural(r.Members, "member"))
	return nil
}

// joinRoom joins room with password; when the room refuses (403) without
// a password and standard input is a terminal, it asks for the password
// and tries again.
func joinRoom(ctx context.Context, e *Env, co *clientOptions, path, room, password string) (client.Room, error) {
	var r client.Room
	join := func() error {
		return callServer(ctx, co, true, func(ctx context.Context, c *client.Client) (err error) {
			r, err = c.JoinRoom(ctx, room, password)
			return err
		})
	}
	err := join()
	if ce, ok := errors.AsType[*client.Error](err); ok && ce.Status == 403 && password == "" {
		if !isTerminal(e.Stdin) {
			return r, fmt.Errorf("%s; give the room's password with: parley room join %s --password-stdin", describe(err), termSafe(room))
		}
		if password, err = readPassword(e, path, "room "+room, false, false); err != nil {
			return r, err
		}
		err = join()
	}
	return r, err
}

// runRoomLeave is `parley room leave NAME`.
func runRoomLeave(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "NAME [flags]", "Stop being a member of a room. Leaving a room you are not in changes nothing.")
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) error {
		return c.LeaveRoom(ctx, pos[0])
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "left %s\n", termSafe(pos[0]))
	return nil
}

// runRoomMembers is `parley room members NAME`.
func runRoomMembers(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var asJSON bool
	fs := newFlagSet(path, "NAME [flags]", "List a room's members, each one's role (owner, moderator, member), whether each is online, and when each joined.")
	addClientFlags(fs, &co)
	fs.BoolVar(&asJSON, "json", false, "print the members as JSON")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var ms []client.Member
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		ms, err = c.Members(ctx, pos[0])
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSONList(e.Stdout, ms)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tROLE\tONLINE\tJOINED")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termSafe(m.Username), termSafe(m.Role), yesNo(m.Online), formatMs(m.JoinedAt))
	}
	return tw.Flush()
}

// runRoomPost is `parley room post ROOM TEXT`.
func runRoomPost(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var to []string
	fs := newFlagSet(path, "ROOM TEXT [flags]", `
Post TEXT to a room you are a member of and print its seq. A TEXT of "-"
reads the message from standard input (without its final newline; CRLF
line ends become newlines). With --to the post is a whisper: only its
sender and recipients see the text, other members see a hidden event at
the same seq. The server refuses control characters other than newline and
tab, and text of white space only.`)
	addClientFlags(fs, &co)
	fs.Var(newListValue(&to, nil), "to", "whisper to these `users` (comma-separated, or repeat the flag)")
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	text := pos[1]
	if text == "-" {
		b, err := io.ReadAll(e.Stdin)
		if err != nil {
			return fmt.Errorf("read message from stdin: %w", err)
		}
		text = strings.TrimSuffix(string(b), "\n")
	}
	// Line ends typed on Windows are newlines: the server refuses a
	// carriage return, a control character.
	text = strings.TrimSuffix(strings.ReplaceAll(text, "\r\n", "\n"), "\r")
	var res client.PostResult
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		res, err = c.Post(ctx, pos[0], text, client.PostOptions{To: to})
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "posted #%d\n", res.Seq)
	return nil
}

// runRoomHistory is `parley room history ROOM`.
func runRoomHistory(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var opts client.HistoryOptions
	var asJSON, follow bool
	fs := newFlagSet(path, "ROOM [flags]", `
Print a page of a room's events in seq order, one per line: "#SEQ TIME" then
"sender: text" for messages, "sender -> a,b (whisper): text" for whispers
you sent or received, "* user joined" or "* user left", and "(hidden)" for
whispers between others. Without --after, the latest --limit events; with
it, the first --limit events after that seq. --follow keeps printing new
events until interrupted. Names and text are printed with the characters a
terminal would act on escaped (\x1b, \u202e, and \\ for a backslash); the
lines of a multi-line message after its first are indented.`)
	addClientFlags(fs, &co)
	fs.Uint64Var(&opts.After, "after", 0, "print events after this `seq`")
	fs.Uint64Var(&opts.Before, "before", 0, "print events before this `seq`")
	fs.IntVar(&opts.Limit, "limit", 50, "print at most this many `events` per page (1-500)")
	fs.BoolVar(&asJSON, "json", false, "print the events as JSON lines, as the API returns them")
	fs.BoolVar(&follow, "follow", false, "keep printing new events as they are posted (polls every 500 ms)")
	fs.BoolVar(&follow, "f", false, "short for --follow")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	opts.HasAfter = given(fs, "after")
	if opts.Limit < 1 || opts.Limit > 500 {
		return usagef(path, "--limit %d: want 1 to 500", opts.Limit)
	}
	if follow && opts.Before != 0 {
		return usagef(path, "--follow and --before exclude each other")
	}
	var evs []client.Event
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		evs, err = c.History(ctx, pos[0], opts)
		return err
	})
	if err != nil {
		return err
	}
	last := opts.After
	for _, ev := range evs {
		if err := writeEvent(e.Stdout, ev, asJSON); err != nil {
			return err
		}
		last = ev.Seq
	}
	if !follow {
		return nil
	}
	if len(evs) == 0 && !opts.HasAfter { // start from the room's present
		var r client.RoomSummary
		if r, err = findRoom(ctx, &co, pos[0]); err != nil {
			return err
		}
		last = r.LastSeq
	}
	feed := newHistoryFeed(co.newClient(), pos[0], last)
	for {
		ev, err := feed.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: the normal end of --follow
			}
			return err
		}
		if err := writeEvent(e.Stdout, ev, asJSON); err != nil {
			return err
		}
	}
}

// findRoom returns room from the caller's room list; 404 when it is not
// there.
func findRoom(ctx context.Context, co *clientOptions, room string) (client.RoomSummary, error) {
	var rooms []client.RoomSummary
	err := callServer(ctx, co, false, func(ctx context.Context, c *client.Client) (err error) {
		rooms, err = c.ListRooms(ctx)
		return err
	})
	if err != nil {
		return client.RoomSummary{}, err
	}
	for _, r := range rooms {
		if strings.EqualFold(r.Name, room) {
			return r, nil
		}
	}
	return client.RoomSummary{}, &client.Error{Status: 404, Code: "not_found", Message: fmt.Sprintf("room %q not found", room)}
}

// writeEvent prints one history event: as a line of JSON, or as
// "#SEQ TIME " and the event's text, escaped for the terminal (eventText).
func writeEvent(w io.Writer, ev client.Event, asJSON bool) error {
	if asJSON {
		return printJSONLine(w, ev)
	}
	_, err := fmt.Fprintf(w, "#%d %s %s\n", ev.Seq, clock(ev.Ts), eventText(ev))
	return err
}

// eventText renders an event's content for people, safe to print: names
// and text are escaped (termSafe), and a multi-line text continues on
// indented lines (termSafeLines), so no event can act on the terminal or
// pass for another.
func eventText(ev client.Event) string {
	sender, msg := senderText(ev.Sender), termSafeLines(ev.Text) // room_hook.go
	if ev.Deleted {
		msg = "(message deleted)"
	}
	if change := changeText(ev); change != "" {
		return change
	}
	if mod := moderationText(ev); mod != "" {
		return mod
	}
	switch ev.Kind {
	case "message":
		return sender + ": " + msg + messageNotes(ev)
	case "whisper":
		return fmt.Sprintf("%s -> %s (whisper): %s", sender, termSafe(strings.Join(ev.To, ",")), msg) + messageNotes(ev)
	case "hidden":
		return "(hidden)"
	case "join":
		return "* " + sender + " joined"
	case "leave":
		return "* " + sender + " left"
	}
	return fmt.Sprintf("(%s) %s: %s", termSafe(ev.Kind), sender, msg)
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parley-chat/parley/client"
)

// chatModCommands are the chat's commands about the room's members and
// settings: the moderation `parley room` offers, for the room chatted in.
// The server decides who may (moderators, the owner, admins); a refusal
// shows as its message.
func chatModCommands() []chatCommand {
	return []chatCommand{
		{name: "members", help: "members of this room with their roles", needsIn: true, run: (*chatSession).membersCmd},
		{name: "topic", args: "[TEXT]", help: "show this room's topic, or set it to TEXT (moderators)", needsIn: true, run: (*chatSession).topic},
		{name: "invite", args: "USER", help: "invite USER into this private room (moderators)", needsIn: true, run: modCmd("invite")},
		{name: "kick", args: "USER [REASON]", help: "remove USER from this room; they may join again (moderators)", needsIn: true, run: modCmd("kick")},
		{name: "ban", args: "USER [DURATION] [REASON]", help: "ban USER, for DURATION (such as 1h) or for good (moderators)", needsIn: true, run: modCmd("ban")},
		{name: "unban", args: "USER", help: "lift the ban of USER (moderators)", needsIn: true, run: modCmd("unban")},
		{name: "mute", args: "USER DURATION [REASON]", help: "mute USER for DURATION (such as 10m): they read but cannot post (moderators)", needsIn: true, run: modCmd("mute")},
		{name: "unmute", args: "USER", help: "lift the mute of USER (moderators)", needsIn: true, run: modCmd("unmute")},
		{name: "mod", args: "USER", help: "make member USER a moderator (the owner)", needsIn: true, run: modCmd("mod")},
		{name: "unmod", args: "USER", help: "make moderator USER a plain member again (the owner)", needsIn: true, run: modCmd("unmod")},
		{name: "modlog", help: "bans and mutes in force, invitations, latest moderation events (moderators)", needsIn: true, run: (*chatSession).modlog},
	}
}

// modAction is a moderation command typed in the chat, parsed.
type modAction struct {
	// Cmd is the command's name: kick, ban, unban, mute, unmute, mod,
	// unmod or invite.
	Cmd  string
	User string
	// Duration is how long a ban or mute lasts (0: a ban for good).
	Duration time.Duration
	Reason   string
}

// modUsage is the usage of each moderation command that names a user.
var modUsage = map[string]string{
	"kick": "/kick USER [REASON]", "ban": "/ban USER [DURATION] [REASON]", "unban": "/unban USER",
	"mute": "/mute USER DURATION [REASON]", "unmute": "/unmute USER", "mod": "/mod USER", "unmod": "/unmod USER",
	"invite": "/invite USER",
}

// parseModArgs parses the arguments of the moderation command cmd; USER
// may be written as a mention, "@bob". A
// DURATION is a Go duration of whole seconds ("90s", "10m", "2h30m"), as
// `parley room ban --for` takes; for /ban, a word after USER that starts
// with a digit is read as one, so that a mistyped duration ("10x") is an
// error rather than a ban for good with "10x" as its reason.
func parseModArgs(cmd, args string) (modAction, error) {
	usage := errors.New("usage: " + modUsage[cmd])
	user, rest, _ := strings.Cut(strings.TrimSpace(args), " ")
	rest = strings.TrimSpace(rest)
	user = strings.TrimPrefix(user, "@") // as a mention writes it
	a := modAction{Cmd: cmd, User: user}
	if user == "" || strings.ContainsAny(user, "\t") {
		return modAction{}, usage
	}
	switch cmd {
	case "kick":
		a.Reason = rest
	case "ban", "mute":
		word, reason, _ := strings.Cut(rest, " ")
		if cmd == "ban" && (word == "" || word[0] < '0' || word[0] > '9') {
			a.Reason = rest
			break
		}
		if word == "" {
			return modAction{}, fmt.Errorf("%w (a mute needs a DURATION, such as 10m)", usage)
		}
		d, err := time.ParseDuration(word)
		if err != nil || d <= 0 || d%time.Second != 0 {
			return modAction{}, fmt.Errorf("DURATION %q: want a positive number of whole seconds, such as 90s, 10m or 2h; %w", termSafe(word), usage)
		}
		a.Duration, a.Reason = d, strings.TrimSpace(reason)
	default:
		if rest != "" {
			return modAction{}, usage
		}
	}
	return a, nil
}

// modCmd returns the action of the moderation command cmd.
func modCmd(cmd string) func(s *chatSession, ctx context.Context, args string) (bool, error) {
	return func(s *chatSession, ctx context.Context, args string) (bool, error) {
		a, err := parseModArgs(cmd, args)
		if err != nil {
			return false, err
		}
		return false, s.moderate(ctx, a)
	}
}

// moderate carries out a and prints what it did, or that it changed
// nothing; its event shows as well when the feed delivers it.
func (s *chatSession) moderate(ctx context.Context, a modAction) error {
	room := s.room
	user, where := termSafe(a.User), termSafe(room)
	var done string
	var call func(ctx context.Context, c *client.Client) (client.ChangeResult, error)
	switch a.Cmd {
	case "mod", "unmod":
		role := map[string]string{"mod": "moderator", "unmod": "member"}[a.Cmd]
		done = fmt.Sprintf("%s is %s of %s", user, article(role), where)
		call = func(ctx context.Context, c *client.Client) (client.ChangeResult, error) {
			return c.SetRole(ctx, room, a.User, role)
		}
	case "invite":
		done = fmt.Sprintf("invited %s to %s", user, where)
		call = func(ctx context.Context, c *client.Client) (client.ChangeResult, error) {
			return c.Invite(ctx, room, a.User)
		}
	default:
		done = sanctionDone(a, user, where)
		call = func(ctx context.Context, c *client.Client) (client.ChangeResult, error) {
			return c.Moderate(ctx, room, a.User, a.Cmd, client.SanctionOptions{Duration: a.Duration, Reason: a.Reason})
		}
	}
	var res client.ChangeResult
	err := s.do(ctx, true, func(ctx context.Context, c *client.Client) (err error) {
		res, err = call(ctx, c)
		return err
	})
	switch {
	case err != nil:
		return err
	case res.Seq == 0:
		s.printf("-- nothing to change: %s already\n", done)
	default:
		s.printf("-- %s (#%d)\n", done, res.Seq)
	}
	return nil
}

// sanctionDone describes a kick, ban, mute or the lifting of one.
func sanctionDone(a modAction, user, where string) string {
	if action, ok := strings.CutPrefix(a.Cmd, "un"); ok {
		return fmt.Sprintf("lifted the %s of %s in %s", action, user, where)
	}
	done := fmt.Sprintf("%s %s in %s", pastTense(a.Cmd), user, where)
	switch {
	case a.Duration > 0:
		done += " for " + a.Duration.String()
	case a.Cmd == "ban":
		done += " for good"
	}
	return done
}

// membersCmd is `/members`: the room's members with their roles, owner
// and moderators first.
func (s *chatSession) membersCmd(ctx context.Context, _ string) (bool, error) {
	room := s.room
	var ms []client.Member
	err := s.do(ctx, false, func(ctx context.Context, c *client.Client) (err error) {
		ms, err = c.Members(ctx, room)
		return err
	})
	if err != nil {
		return false, err
	}
	s.printf("-- %s of %s:\n", plural(len(ms), "member"), termSafe(room))
	width := 0
	for _, m := range ms {
		width = max(width, len(termSafe(m.Username)))
	}
	slices.SortStableFunc(ms, func(a, b client.Member) int { return roleRank(a.Role) - roleRank(b.Role) })
	for _, m := range ms {
		online := ""
		if m.Online {
			online = ", online"
		}
		s.printf("--   %-*s  %s%s\n", width, termSafe(m.Username), termSafe(m.Role), online)
	}
	return false, nil
}

// roleRank orders roles for /members: the owner, moderators, members,
// then any role this client does not know.
func roleRank(role string) int {
	switch role {
	case "owner":
		return 0
	case "moderator":
		return 1
	case "member":
		return 2
	}
	return 3
}

// topic is `/topic [TEXT]`: show the topic, or set it.
func (s *chatSession) topic(ctx context.Context, args string) (bool, error) {
	room, text := s.room, strings.TrimSpace(args)
	var r client.Room
	err := s.do(ctx, text != "", func(ctx context.Context, c *client.Client) (err error) {
		if text == "" {
			r, err = c.GetRoom(ctx, room)
		} else {
			r, err = c.UpdateRoomSettings(ctx, room, client.RoomSettings{Topic: &text})
		}
		return err
	})
	switch {
	case err != nil:
		return false, err
	case text != "":
		s.printf("-- topic of %s set: %s\n", termSafe(room), termSafe(r.Topic))
	case r.Topic == "":
		s.printf("-- %s has no topic; /topic TEXT sets one\n", termSafe(room))
	default:
		s.printf("-- topic of %s: %s\n", termSafe(room), termSafe(r.Topic))
	}
	return false, nil
}

// modlogEvents is how many of the latest moderation events /modlog shows.
const modlogEvents = 20

// modlog is `/modlog`: the sanctions in force and the latest moderation
// events of the room.
func (s *chatSession) modlog(ctx context.Context, _ string) (bool, error) {
	room := s.room
	var l client.ModerationLog
	err := s.do(ctx, false, func(ctx context.Context, c *client.Client) (err error) {
		l, err = c.Moderation(ctx, room)
		return err
	})
	if err != nil {
		return false, err
	}
	s.printf("-- moderation of %s:\n", termSafe(room))
	n := 0
	for _, g := range []struct {
		name string
		list []client.Sanction
	}{{"banned", l.Bans}, {"muted", l.Mutes}, {"invited", l.Invites}} {
		for _, x := range g.list {
			n++
			s.printf("--   %s %s by %s%s%s\n", g.name, termSafe(x.User), termSafe(x.By), sanctionUntil(g.name, x.Until), reasonText(x.Reason))
		}
	}
	if n == 0 {
		s.printf("--   no bans, mutes or invitations in force\n")
	}
	evs := l.Events
	if len(evs) > modlogEvents {
		s.printf("--   (%d earlier events: parley room moderation %s)\n", len(evs)-modlogEvents, termSafe(room))
		evs = evs[len(evs)-modlogEvents:]
	}
	for _, ev := range evs {
		s.printf("--   #%d [%s] %s\n", ev.Seq, clock(ev.Ts), eventText(ev))
	}
	return false, nil
}

// sanctionUntil says until when a sanction lasts.
func sanctionUntil(what string, until int64) string {
	switch {
	case until != 0:
		return " until " + clock(until)
	case what == "banned":
		return " for good"
	}
	return ""
}

// reasonText is ": REASON", or "" without one.
func reasonText(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + termSafe(reason)
}

package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// runRoomRole is `parley room role ROOM USER ROLE`.
func runRoomRole(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "ROOM USER ROLE [flags]", `
Give a member of a room the role moderator or member (revoking moderator),
or owner to transfer the room's ownership to them (you become a
moderator). The room's owner or an admin may.`)
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 3, 3)
	if err != nil {
		return err
	}
	switch pos[2] {
	case "owner", "moderator", "member":
	default:
		return usagef(path, "ROLE %q: want owner, moderator or member", termSafe(pos[2]))
	}
	return roomModCall(ctx, e, &co, fmt.Sprintf("%s is now %s of %s", termSafe(pos[1]), article(pos[2]), termSafe(pos[0])),
		func(ctx context.Context, c *client.Client) (client.ChangeResult, error) {
			return c.SetRole(ctx, pos[0], pos[1], pos[2])
		})
}

func article(role string) string {
	if role == "owner" {
		return "the owner"
	}
	return "a " + role
}

// runRoomInvite is `parley room invite ROOM USER`.
func runRoomInvite(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var withdraw bool
	fs := newFlagSet(path, "ROOM USER [flags]", `
Invite a user into a private room: they may join it without its password
(an invitation-only room has none). Joining uses the invitation up. The
room's owner, a moderator or an admin may.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&withdraw, "withdraw", false, "withdraw the user's invitation instead")
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	done := fmt.Sprintf("invited %s to %s", termSafe(pos[1]), termSafe(pos[0]))
	call := func(ctx context.Context, c *client.Client) (client.ChangeResult, error) {
		return c.Invite(ctx, pos[0], pos[1])
	}
	if withdraw {
		done = fmt.Sprintf("withdrew the invitation of %s to %s", termSafe(pos[1]), termSafe(pos[0]))
		call = func(ctx context.Context, c *client.Client) (client.ChangeResult, error) {
			return c.Uninvite(ctx, pos[0], pos[1])
		}
	}
	return roomModCall(ctx, e, &co, done, call)
}

// roomSanctionCommand returns the action of `parley room kick`, `ban` and
// `mute`.
func roomSanctionCommand(action, help string) func(context.Context, *Env, string, []string) error {
	return func(ctx context.Context, e *Env, path string, args []string) error {
		var co clientOptions
		var o client.SanctionOptions
		var lift bool
		fs := newFlagSet(path, "ROOM USER [flags]", help)
		addClientFlags(fs, &co)
		fs.StringVar(&o.Reason, "reason", "", "why, shown in the room's history and moderation log")
		if action != "kick" {
			fs.DurationVar(&o.Duration, "for", 0, "how long it lasts, in whole seconds (a ban without it is for good)")
			fs.BoolVar(&lift, "lift", false, "lift the user's "+action+" instead")
		}
		pos, err := parseClient(fs, &co, e, args, 2, 2)
		if err != nil {
			return err
		}
		switch {
		case o.Duration < 0 || o.Duration%time.Second != 0:
			return usagef(path, "--for %v: want a positive number of whole seconds, such as 90s or 2h", o.Duration)
		case lift && o.Duration != 0:
			return usagef(path, "--lift takes no --for")
		case action == "mute" && !lift && o.Duration == 0:
			return usagef(path, "a mute needs --for, such as --for 10m")
		}
		act, done := action, pastTense(action)+" "+termSafe(pos[1])+" in "+termSafe(pos[0])
		if o.Duration > 0 {
			done += " for " + o.Duration.String()
		}
		if lift {
			act, done = "un"+action, "lifted the "+action+" of "+termSafe(pos[1])+" in "+termSafe(pos[0])
		}
		return roomModCall(ctx, e, &co, done, func(ctx context.Context, c *client.Client) (client.ChangeResult, error) {
			return c.Moderate(ctx, pos[0], pos[1], act, o)
		})
	}
}

func pastTense(action string) string {
	switch action {
	case "ban":
		return "banned"
	case "mute":
		return "muted"
	}
	return action + "ed"
}

var (
	runRoomKick = roomSanctionCommand("kick", `
Remove a member from a room; they may join again. The room's owner, a
moderator or an admin may; moderators act on members only.`)
	runRoomBan = roomSanctionCommand("ban", `
Ban a user from a room, for --for or for good: they are removed and can
neither join nor read it until the ban ends or is lifted (--lift). The
room's owner, a moderator or an admin may; moderators act on members only.`)
	runRoomMute = roomSanctionCommand("mute", `
Mute a user in a room for --for: they can read but not post, edit, react
or pin until the mute ends or is lifted (--lift). The room's owner, a
moderator or an admin may; moderators act on members only.`)
)

// roomModCall runs a moderation call and prints done, or that nothing
// changed.
func roomModCall(ctx context.Context, e *Env, co *clientOptions, done string, call func(context.Context, *client.Client) (client.ChangeResult, error)) error {
	var res client.ChangeResult
	err := callServer(ctx, co, true, func(ctx context.Context, c *client.Client) (err error) {
		res, err = call(ctx, c)
		return err
	})
	if err != nil {
		return err
	}
	if res.Seq == 0 {
		fmt.Fprintln(e.Stdout, "nothing to change: "+done+" already")
		return nil
	}
	fmt.Fprintf(e.Stdout, "%s (seq %d)\n", done, res.Seq)
	return nil
}

// runRoomSettings is `parley room settings ROOM`.
func runRoomSettings(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var s client.RoomSettings
	var topic, description, access string
	var slow time.Duration
	var announce bool
	var maxMembers int
	var fromStdin bool
	var ret retentionFlags
	fs := newFlagSet(path, "ROOM [flags]", `
Print a room's settings, or change those given. The topic and description
may be changed by the room's owner and moderators; the rest by the owner
or an admin. --access password asks for the new password (from the
terminal, or with --password-stdin the first line of standard input).
--retention-days and --retention-messages set the room's own retention,
which overrides the cluster's --history-retention.`)
	addClientFlags(fs, &co)
	fs.StringVar(&topic, "topic", "", "the room's topic (\"\" with the flag clears it)")
	fs.StringVar(&description, "description", "", "the room's description")
	fs.BoolVar(&announce, "announcement", false, "make it an announcement room: only the owner and moderators post (=false to undo)")
	fs.DurationVar(&slow, "slow-mode", 0, "least time between two posts of a member, in whole seconds (0: off); moderators are exempt")
	fs.IntVar(&maxMembers, "max-members", 0, "most `members` the room admits, not below its current members")
	fs.StringVar(&access, "access", "", "who may join: public, password or invite (invitation only)")
	fs.BoolVar(&fromStdin, "password-stdin", false, "read the new password from the first line of standard input")
	ret.add(fs)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["topic"] {
		s.Topic = &topic
	}
	if set["description"] {
		s.Description = &description
	}
	if set["announcement"] {
		s.Announcement = &announce
	}
	if set["slow-mode"] {
		if slow < 0 || slow%time.Second != 0 {
			return usagef(path, "--slow-mode %v: want whole seconds, such as 30s", slow)
		}
		sec := int(slow / time.Second)
		s.SlowMode = &sec
	}
	if set["max-members"] {
		s.MaxMembers = &maxMembers
	}
	if err := ret.apply(path, set, &s); err != nil {
		return err
	}
	if set["access"] {
		switch access {
		case "public", "password", "invite":
		default:
			return usagef(path, "--access %q: want public, password or invite", termSafe(access))
		}
		s.Access = &access
	}
	if fromStdin && access != "password" {
		return usagef(path, "--password-stdin needs --access password")
	}
	if access == "password" {
		if s.Password, err = readPassword(e, path, "room "+pos[0], fromStdin, true); err != nil {
			return err
		}
	}
	return changeRoomSettings(ctx, e, &co, pos[0], s)
}

// changeRoomSettings changes the settings of room that s gives, or with
// none reads them, and prints them.
func changeRoomSettings(ctx context.Context, e *Env, co *clientOptions, room string, s client.RoomSettings) error {
	change := s != (client.RoomSettings{})
	var r client.Room
	err := callServer(ctx, co, change, func(ctx context.Context, c *client.Client) (err error) {
		if change {
			r, err = c.UpdateRoomSettings(ctx, room, s)
		} else {
			r, err = c.GetRoom(ctx, room)
		}
		return err
	})
	if err != nil {
		return err
	}
	printRoomSettings(e.Stdout, r)
	return nil
}

// printRoomSettings prints a room's settings one per line.
func printRoomSettings(w io.Writer, r client.Room) {
	access := "public"
	switch {
	case r.InviteOnly:
		access = "invitation only"
	case r.Private:
		access = "password"
	}
	slow := "off"
	if r.SlowMode > 0 {
		slow = (time.Duration(r.SlowMode) * time.Second).String()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "room\t%s\n", termSafe(r.Name))
	fmt.Fprintf(tw, "owner\t%s\n", termSafe(r.Owner))
	fmt.Fprintf(tw, "access\t%s\n", access)
	fmt.Fprintf(tw, "topic\t%s\n", termSafe(r.Topic))
	fmt.Fprintf(tw, "description\t%s\n", termSafe(r.Description))
	fmt.Fprintf(tw, "announcement\t%s\n", yesNo(r.Announcement))
	fmt.Fprintf(tw, "slow mode\t%s\n", slow)
	fmt.Fprintf(tw, "members\t%d of %d\n", r.Members, r.MaxMembers)
	printRetention(tw, r)
	_ = tw.Flush()
}

// runRoomModeration is `parley room moderation ROOM`.
func runRoomModeration(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var asJSON bool
	fs := newFlagSet(path, "ROOM [flags]", `
Print a room's bans and mutes in force, its open invitations and its latest
moderation events (role changes, invitations, kicks, bans, mutes, settings)
with who acted and why. The room's owner, moderators and admins may.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&asJSON, "json", false, "print the log as JSON, as GET /api/v1/rooms/{room}/moderation returns it")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var l client.ModerationLog
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		l, err = c.Moderation(ctx, pos[0])
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e.Stdout, l)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "IN FORCE\tUSER\tBY\tSINCE\tUNTIL\tREASON")
	for _, g := range []struct {
		name string
		list []client.Sanction
	}{{"ban", l.Bans}, {"mute", l.Mutes}, {"invite", l.Invites}} {
		for _, s := range g.list {
			until := "-"
			if s.Until != 0 {
				until = formatMs(s.Until)
			} else if g.name == "ban" {
				until = "for good"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", g.name, termSafe(s.User), termSafe(s.By), formatMs(s.At), until, termSafe(s.Reason))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout)
	for _, ev := range l.Events {
		fmt.Fprintf(e.Stdout, "#%d %s %s\n", ev.Seq, clock(ev.Ts), eventText(ev))
	}
	return nil
}

// moderationText renders a moderation event, or "" for other kinds.
func moderationText(ev client.Event) string {
	who, user := termSafe(ev.Sender), termSafe(ev.User)
	var s string
	switch ev.Kind {
	case "role":
		s = fmt.Sprintf("%s made %s %s", who, user, article(ev.Role))
	case "invite":
		s = fmt.Sprintf("%s invited %s", who, user)
	case "uninvite":
		s = fmt.Sprintf("%s withdrew the invitation of %s", who, user)
	case "kick":
		s = fmt.Sprintf("%s removed %s", who, user)
	case "ban", "mute":
		s = fmt.Sprintf("%s %s %s", who, pastTense(ev.Kind), user)
		if ev.Until != 0 {
			s += " until " + formatMs(ev.Until)
		} else if ev.Kind == "ban" {
			s += " for good"
		}
	case "unban", "unmute":
		s = fmt.Sprintf("%s lifted the %s of %s", who, strings.TrimPrefix(ev.Kind, "un"), user)
	case "settings":
		s = fmt.Sprintf("%s changed the %s", who, termSafe(strings.Join(ev.Changed, ", ")))
	case "legal_hold":
		s = who + " placed the room under legal hold"
	case "legal_hold_lifted":
		s = who + " lifted the room's legal hold"
	default:
		return ""
	}
	if ev.Reason != "" {
		s += ": " + termSafe(ev.Reason)
	}
	return "* " + s
}

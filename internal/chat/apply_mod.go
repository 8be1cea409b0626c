package chat

import (
	"fmt"
	"math"
	"strings"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// Authority levels in a room, lowest first. An administrator acting as one
// (the command's Admin flag, set by the Service from the signed-in
// account) has the owner's authority.
const (
	levelNone      = iota // not a member
	levelMember           // a member
	levelModerator        // a member with the moderator role
	levelOwner            // the room's owner, or an administrator
)

// actor is who issues a command in a room, with their authority.
type actor struct {
	name   string // as the room spells them when a member
	level  int
	m      memberRecord
	member bool
}

// actorOf loads user's membership and authority in room.
func actorOf(r state.Reader, room string, rec *roomRecord, user string, admin bool) (actor, error) {
	m, member, err := getMember(r, room, user)
	if err != nil {
		return actor{}, err
	}
	a := actor{name: user, m: m, member: member}
	if member {
		a.name, a.level = m.name, levelMember
		if m.role == roleModerator {
			a.level = levelModerator
		}
	}
	if admin || ident.EqualFold(user, rec.owner) {
		a.level = levelOwner
	}
	return a, nil
}

// roleOf returns the role name of member m of a room owned by owner.
func roleOf(m memberRecord, owner string) string {
	switch {
	case ident.EqualFold(m.name, owner):
		return RoleOwner
	case m.role == roleModerator:
		return RoleModerator
	}
	return RoleMember
}

// appendModeration appends the moderation event ev to room, lists it in the
// moderation log and stores the room.
func appendModeration(w state.Writer, meta state.Meta, room string, rec *roomRecord, ev *eventRecord, op byte) ([]byte, error) {
	seq, ts, err := appendEventTo(w, meta, room, rec, ev)
	if err != nil {
		return nil, err
	}
	if err := w.Set(logKey(room, seq), nil); err != nil {
		return nil, fmt.Errorf("chat: write moderation log key: %w", err)
	}
	if err := setRoom(w, room, rec); err != nil {
		return nil, err
	}
	res := okResult{op: op, seq: seq, ts: ts, user: ev.sender}
	if op == opSettings || op == opLegalHold {
		res.room, res.rec = room, rec
	}
	return encodeOK(res), nil
}

// modCommand loads the room of a command by user about target and the
// actor; a refusal when a name is invalid, the room is missing, or the
// actor's level is below need (verb completes the message).
func modCommand(r state.Reader, room, user, target string, admin bool, need int, verb string) (*roomRecord, actor, []byte, error) {
	rec, refusal, err := commandRoom(r, room, user)
	if err != nil || refusal != nil {
		return nil, actor{}, refusal, err
	}
	if !ident.ValidUsername(target) {
		return nil, actor{}, refuse(statusInvalid, "username %q is invalid", clip(target)), nil
	}
	a, err := actorOf(r, room, rec, user, admin)
	if err != nil {
		return nil, actor{}, nil, err
	}
	if a.level < need {
		who := "the owner, a moderator or an admin"
		if need == levelOwner {
			who = "the owner or an admin"
		}
		return nil, actor{}, refuse(statusForbidden, "only %s of room %q may %s", who, room, verb), nil
	}
	return rec, a, nil, nil
}

func applySetRole(w state.Writer, meta state.Meta, c SetRole) ([]byte, error) {
	rec, a, refusal, err := modCommand(w, c.Room, c.User, c.Target, c.Admin, levelOwner, "change roles")
	if err != nil || refusal != nil {
		return refusal, err
	}
	tm, member, err := getMember(w, c.Room, c.Target)
	switch {
	case err != nil:
		return nil, err
	case !member:
		return refuse(statusNotFound, "%s is not a member of room %q", c.Target, c.Room), nil
	case roleOf(tm, rec.owner) == c.Role:
		return encodeOK(okResult{op: opSetRole, user: a.name}), nil // already so
	case ident.EqualFold(tm.name, rec.owner):
		return refuse(statusConflict, "%s owns room %q: transfer the ownership to another member first", tm.name, c.Room), nil
	}
	role := roleMember
	switch c.Role {
	case RoleModerator:
		role = roleModerator
	case RoleOwner:
		old, oldMember, err := getMember(w, c.Room, rec.owner)
		if err != nil {
			return nil, err
		}
		if oldMember {
			old.role = roleModerator
			if err := setMember(w, c.Room, old); err != nil {
				return nil, err
			}
		}
		rec.owner = tm.name
	}
	tm.role = role
	if err := setMember(w, c.Room, tm); err != nil {
		return nil, err
	}
	return appendModeration(w, meta, c.Room, rec, &eventRecord{kind: evRole, sender: a.name, arg: tm.name, role: roleBytes[c.Role]}, opSetRole)
}

func applyInvite(w state.Writer, meta state.Meta, c Invite) ([]byte, error) {
	rec, a, refusal, err := modCommand(w, c.Room, c.User, c.Target, c.Admin, levelModerator, "invite")
	if err != nil || refusal != nil {
		return refusal, err
	}
	if !rec.private {
		return refuse(statusInvalid, "room %q is public: anyone may join it without an invitation", c.Room), nil
	}
	old, invited, err := getSanction(w, c.Room, invitePrefix, c.Target)
	if err != nil {
		return nil, err
	}
	if c.Undo {
		if !invited {
			return refuse(statusNotFound, "%s has no invitation to room %q", c.Target, c.Room), nil
		}
		if err := deleteKey(w, sanctionKey(c.Room, invitePrefix, c.Target)); err != nil {
			return nil, err
		}
		return appendModeration(w, meta, c.Room, rec, &eventRecord{kind: evUninvite, sender: a.name, arg: old.name}, opInvite)
	}
	if _, member, err := getMember(w, c.Room, c.Target); err != nil || member {
		if err != nil {
			return nil, err
		}
		return refuse(statusConflict, "%s is already a member of room %q", c.Target, c.Room), nil
	}
	if _, banned, err := activeSanction(w, c.Room, banPrefix, c.Target, meta.TimeMs); err != nil || banned {
		if err != nil {
			return nil, err
		}
		return refuse(statusConflict, "%s is banned from room %q: lift the ban first", c.Target, c.Room), nil
	}
	if invited {
		return encodeOK(okResult{op: opInvite, user: a.name}), nil // already invited
	}
	if err := setSanction(w, c.Room, invitePrefix, sanction{name: c.Target, actor: a.name, at: meta.TimeMs}); err != nil {
		return nil, err
	}
	return appendModeration(w, meta, c.Room, rec, &eventRecord{kind: evInvite, sender: a.name, arg: c.Target}, opInvite)
}

// actionVerbs name the moderation actions in refusals.
var actionVerbs = map[ModAction]string{ActKick: "kick", ActBan: "ban", ActUnban: "unban", ActMute: "mute", ActUnmute: "unmute"}

func applyModerate(w state.Writer, meta state.Meta, c Moderate) ([]byte, error) {
	verb := actionVerbs[c.Action]
	rec, a, refusal, err := modCommand(w, c.Room, c.User, c.Target, c.Admin, levelModerator, verb+" users")
	if err != nil || refusal != nil {
		return refusal, err
	}
	tm, member, err := getMember(w, c.Room, c.Target)
	if err != nil {
		return nil, err
	}
	name := c.Target
	if member {
		name = tm.name
	}
	switch {
	case ident.EqualFold(c.Target, c.User):
		return refuse(statusInvalid, "you cannot %s yourself", verb), nil
	case ident.EqualFold(c.Target, rec.owner):
		return refuse(statusForbidden, "%s owns room %q and cannot be %s", name, c.Room, pastTense(verb)), nil
	case member && tm.role == roleModerator && a.level < levelOwner:
		return refuse(statusForbidden, "%s is a moderator of room %q: only the owner or an admin may %s them", name, c.Room, verb), nil
	case c.DurationMs > math.MaxInt64-uint64(max(meta.TimeMs, 0)):
		return refuse(statusInvalid, "duration is too long"), nil
	}
	ev := &eventRecord{sender: a.name, arg: name, text: c.Reason}
	var until int64
	if c.DurationMs > 0 {
		until = meta.TimeMs + int64(c.DurationMs)
	}
	switch c.Action {
	case ActKick:
		if !member {
			return refuse(statusNotFound, "%s is not a member of room %q", name, c.Room), nil
		}
		ev.kind = evKick
		if err := removeMember(w, c.Room, rec, tm); err != nil {
			return nil, err
		}
	case ActBan:
		ev.kind, ev.until = evBan, until
		s := sanction{name: name, actor: a.name, at: meta.TimeMs, until: until, reason: c.Reason}
		if err := setSanction(w, c.Room, banPrefix, s); err != nil {
			return nil, err
		}
		if err := deleteKey(w, sanctionKey(c.Room, invitePrefix, name)); err != nil {
			return nil, err
		}
		if member {
			if err := removeMember(w, c.Room, rec, tm); err != nil {
				return nil, err
			}
		}
	case ActMute:
		if c.DurationMs == 0 {
			return refuse(statusInvalid, "a mute needs a duration"), nil
		}
		ev.kind, ev.until = evMute, until
		s := sanction{name: name, actor: a.name, at: meta.TimeMs, until: until, reason: c.Reason}
		if err := setSanction(w, c.Room, mutePrefix, s); err != nil {
			return nil, err
		}
	case ActUnban, ActUnmute:
		kind, what := banPrefix, "banned from"
		ev.kind = evUnban
		if c.Action == ActUnmute {
			kind, ev.kind, what = mutePrefix, evUnmute, "muted in"
		}
		if _, active, err := activeSanction(w, c.Room, kind, name, meta.TimeMs); err != nil || !active {
			if err != nil {
				return nil, err
			}
			return refuse(statusNotFound, "%s is not %s room %q", name, what, c.Room), nil
		}
		if err := deleteKey(w, sanctionKey(c.Room, kind, name)); err != nil {
			return nil, err
		}
	}
	return appendModeration(w, meta, c.Room, rec, ev, opModerate)
}

func pastTense(verb string) string {
	if verb == "ban" {
		return "banned"
	}
	if strings.HasSuffix(verb, "e") {
		return verb + "d"
	}
	return verb + "ed"
}

// removeMember deletes m's membership of room (a kick or ban) and counts it
// in rec; the caller stores rec.
func removeMember(w state.Writer, room string, rec *roomRecord, m memberRecord) error {
	if err := deleteKey(w, memberKey(room, m.name)); err != nil {
		return err
	}
	rec.members--
	return nil
}

func applySettings(w state.Writer, meta state.Meta, c Settings) ([]byte, error) {
	need := levelOwner
	if c.Set&^(SetTopic|SetDescription) == 0 {
		need = levelModerator
	}
	rec, a, refusal, err := modCommand(w, c.Room, c.User, c.User, c.Admin, need, "change these settings")
	if err != nil || refusal != nil {
		return refusal, err
	}
	if c.Set == 0 {
		return refuse(statusInvalid, "no setting to change"), nil
	}
	s := &rec.settings
	if c.Set&SetTopic != 0 {
		s.topic = c.Topic
	}
	if c.Set&SetDescription != 0 {
		s.description = c.Description
	}
	if c.Set&SetAnnouncement != 0 {
		s.announcement = c.Announcement
	}
	if c.Set&SetSlowMode != 0 {
		s.slowModeSec = c.SlowModeSec
	}
	if c.Set&SetMaxMembers != 0 {
		switch {
		case c.MaxMembers == 0:
			return refuse(statusInvalid, "max_members must be at least 1"), nil
		case c.MaxMembers < rec.members:
			return refuse(statusConflict, "room %q has %d members: max_members cannot be lower", c.Room, rec.members), nil
		}
		rec.maxMembers = c.MaxMembers
	}
	if c.Set&SetAccess != 0 {
		if (c.Access == AccessPassword) != (c.PasswordHash != "") {
			return refuse(statusInvalid, "password: access %q needs one and the others take none", accessNames[c.Access]), nil
		}
		rec.private, rec.passwordHash = c.Access != AccessPublic, c.PasswordHash
	}
	if ref := applyRetentionSettings(rec, c); ref != nil {
		return ref, nil
	}
	var changed []string
	for _, sn := range settingNames {
		if c.Set&sn.bit != 0 {
			changed = append(changed, sn.name)
		}
	}
	return appendModeration(w, meta, c.Room, rec, &eventRecord{kind: evSettings, sender: a.name, arg: strings.Join(changed, ",")}, opSettings)
}

// accessNames name the access modes as the API does.
var accessNames = map[Access]string{AccessPublic: "public", AccessPassword: "password", AccessInvite: "invite"}

// postRules refuses a post by member m at time now when m is muted, the
// room is for announcements and m is no moderator, or slow mode says m
// posted too recently; otherwise it records the post's time in m when slow
// mode needs it (the caller stores m).
func postRules(r state.Reader, room string, rec *roomRecord, m *memberRecord, now int64) ([]byte, error) {
	if ref, err := muteRule(r, room, m.name, now); ref != nil || err != nil {
		return ref, err
	}
	if ident.EqualFold(m.name, rec.owner) || m.role == roleModerator {
		return nil, nil
	}
	s := rec.settings
	if s.announcement {
		return refuse(statusForbidden, "room %q is for announcements: only its owner and moderators post", room), nil
	}
	if s.slowModeSec > 0 {
		if wait := m.lastPost + int64(min(s.slowModeSec, math.MaxInt32))*1000 - now; m.lastPost != 0 && wait > 0 {
			return refuse(statusRateLimited, slowModeRefusal, room, s.slowModeSec, (wait+999)/1000), nil
		}
		m.lastPost = now
	}
	return nil, nil
}

// muteRule refuses to let a muted user post, edit, react, pin or unpin:
// anything that adds an event every member sees.
func muteRule(r state.Reader, room, user string, now int64) ([]byte, error) {
	s, muted, err := activeSanction(r, room, mutePrefix, user, now)
	if err != nil || !muted {
		return nil, err
	}
	return refuse(statusForbidden, "you are muted in room %q until %d (Unix ms)", room, s.until), nil
}

// joinRules decides what a ban or an invitation says about user joining
// room at now: a refusal when banned; invited when an invitation lets them
// in without the password (joining uses it up: the caller deletes it).
func joinRules(r state.Reader, room, user string, now int64) (refusal []byte, invited bool, err error) {
	ban, banned, err := activeSanction(r, room, banPrefix, user, now)
	if err != nil {
		return nil, false, err
	}
	if banned {
		if ban.until == 0 {
			return refuse(statusForbidden, "you are banned from room %q", room), false, nil
		}
		return refuse(statusForbidden, "you are banned from room %q until %d (Unix ms)", room, ban.until), false, nil
	}
	_, invited, err = getSanction(r, room, invitePrefix, user)
	return nil, invited, err
}

// deleteRoomKeys deletes every key of room under the given one-letter
// prefixes (members, bans, mutes, invitations) when the room is deleted.
func deleteRoomKeys(w state.Writer, room string, kinds ...byte) error {
	var keys [][]byte
	for _, kind := range kinds {
		lo := sanctionPrefix(room, kind)
		if err := w.Scan(lo, state.PrefixEnd(lo), func(k, _ []byte) bool {
			keys = append(keys, append([]byte(nil), k...))
			return true
		}); err != nil {
			return fmt.Errorf("chat: scan %q: %w", lo, err)
		}
	}
	for _, k := range keys {
		if err := deleteKey(w, k); err != nil {
			return err
		}
	}
	return nil
}

package chat

import (
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// StateMachine applies chat commands to one partition's state. It has no
// fields: everything it needs is in the command, the meta and the state.
//
// Apply checks everything that decides a command's outcome against the
// replicated state (the room exists, the user is a member, the room is not
// full, the verified password hash is the room's), so every replica reaches
// the same outcome. A refusal writes nothing. Limits that are node flags
// (text length, member cap) are checked by the Service before proposing,
// never here: replicas with different flags must not diverge.
type StateMachine struct{}

var _ state.Applier = StateMachine{}

// DefaultCompactBudget is the most events one Compact deletes when its Budget
// is 0, which bounds the size of the write batch.
const DefaultCompactBudget = 10000

// Apply implements state.Applier. A command that does not decode yields an
// invalid result and changes nothing; an error means the state could not be
// read or written, or a stored record is corrupt.
func (StateMachine) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	c, err := DecodeCommand(cmd)
	if err != nil {
		return refuse(statusInvalid, "%v", err), nil
	}
	switch c := c.(type) {
	case CreateRoom:
		return applyCreate(w, meta, c)
	case DeleteRoom:
		return applyDelete(w, c)
	case Join:
		return applyJoin(w, meta, c)
	case Leave:
		return applyLeave(w, meta, c)
	case MarkRead:
		return applyMarkRead(w, c)
	case Post:
		return applyPost(w, meta, c, cmd[1])
	case Edit:
		return applyEdit(w, meta, c)
	case Remove:
		return applyRemove(w, meta, c)
	case React:
		return applyReact(w, meta, c)
	case Pin:
		return applyPin(w, meta, c)
	case Notify:
		return applyNotify(w, meta, c)
	case Compact:
		return applyCompact(w, meta, c)
	case SetRole:
		return applySetRole(w, meta, c)
	case Invite:
		return applyInvite(w, meta, c)
	case Moderate:
		return applyModerate(w, meta, c)
	case Settings:
		return applySettings(w, meta, c)
	case LegalHold: // hold.go
		return applyLegalHold(w, meta, c)
	case CreateHook: // hooks.go
		return applyCreateHook(w, meta, c)
	case RevokeHook:
		return applyRevokeHook(w, c)
	case HookPost:
		return applyHookPost(w, meta, c)
	case CreateOutHook: // outhooks.go
		return applyCreateOutHook(w, meta, c)
	case DeleteOutHook:
		return applyDeleteOutHook(w, c)
	case Delivered:
		return applyDelivered(w, meta, c)
	case FileChunk: // apply_file.go
		return applyFileChunk(w, meta, c)
	case FileCommit:
		return applyFileCommit(w, meta, c)
	case FileAbort:
		return applyFileAbort(w, c)
	default:
		return refuse(statusInvalid, "chat: unhandled command %T", c), nil
	}
}

// checkNames returns a refusal when room is not a canonical room name or
// user not a valid username.
func checkNames(room, user string) []byte {
	if !isCanonicalRoom(room) {
		return refuse(statusInvalid, "room name %q is invalid", clip(room))
	}
	if !ident.ValidUsername(user) {
		return refuse(statusInvalid, "username %q is invalid", clip(user))
	}
	return nil
}

// notFound is the refusal for a missing or deleted room.
func notFound(room string) []byte {
	return refuse(statusNotFound, "room %q not found", room)
}

// appendEventTo stores ev as the next event of room and advances rec's seq
// and time; the caller stores rec. The event's time is meta's, raised to the
// room's last time so it never goes back; it is set in ev.
func appendEventTo(w state.Writer, meta state.Meta, room string, rec *roomRecord, ev *eventRecord) (uint64, int64, error) {
	ev.ts = max(meta.TimeMs, rec.lastTs)
	seq := rec.lastSeq + 1
	if err := setEvent(w, room, seq, ev); err != nil {
		return 0, 0, err
	}
	rec.lastSeq, rec.lastTs = seq, ev.ts
	return seq, ev.ts, nil
}

// setEvent stores ev as room's event seq.
func setEvent(w state.Writer, room string, seq uint64, ev *eventRecord) error {
	k := eventKey(room, seq)
	if err := w.Set(k, encodeEvent(ev)); err != nil {
		return fmt.Errorf("chat: write %q: %w", k, err)
	}
	return nil
}

func setRoom(w state.Writer, room string, rec *roomRecord) error {
	if err := w.Set(roomKey(room), encodeRoom(rec)); err != nil {
		return fmt.Errorf("chat: write room %q: %w", room, err)
	}
	return nil
}

func setMember(w state.Writer, room string, m memberRecord) error {
	if err := w.Set(memberKey(room, m.name), encodeMember(m)); err != nil {
		return fmt.Errorf("chat: write member %q of %q: %w", m.name, room, err)
	}
	return nil
}

// commandRoom checks a command's room and user names and loads the room,
// which must exist and not be deleted (liveRoom); refusal is the command's
// result when not.
func commandRoom(r state.Reader, room, user string) (rec *roomRecord, refusal []byte, err error) {
	if ref := checkNames(room, user); ref != nil {
		return nil, ref, nil
	}
	rec, err = liveRoom(r, room)
	if errs.Is(err, errs.NotFound) {
		return nil, notFound(room), nil
	}
	return rec, nil, err
}

func applyCreate(w state.Writer, meta state.Meta, c CreateRoom) ([]byte, error) {
	if ref := checkNames(c.Room, c.Owner); ref != nil {
		return ref, nil
	}
	if c.InviteOnly && (!c.Private || c.PasswordHash != "") {
		return refuse(statusInvalid, "an invitation-only room is private and has no password"), nil
	}
	if !c.InviteOnly && c.Private != (c.PasswordHash != "") {
		return refuse(statusInvalid, "password: a private room needs one and a public room takes none"), nil
	}
	if c.MaxMembers == 0 {
		return refuse(statusInvalid, "max_members must be at least 1"), nil
	}
	old, err := getRoom(w, c.Room)
	if err != nil {
		return nil, err
	}
	if old != nil && !old.deleted {
		return refuse(statusConflict, "room %q already exists", c.Room), nil
	}
	rec := &roomRecord{
		owner:         c.Owner,
		private:       c.Private,
		passwordHash:  c.PasswordHash,
		maxMembers:    c.MaxMembers,
		members:       1,
		firstRetained: 1,
	}
	if old != nil {
		// A room created again under a deleted one's name continues its seqs,
		// so a seq never names two events; the old events are gone.
		rec.lastSeq, rec.lastTs, rec.firstRetained = old.lastSeq, old.lastTs, old.lastSeq+1
	}
	seq, ts, err := appendEventTo(w, meta, c.Room, rec, &eventRecord{kind: evJoin, sender: c.Owner})
	if err != nil {
		return nil, err
	}
	rec.createdAt = ts
	if err := setMember(w, c.Room, memberRecord{name: c.Owner, joinedAt: ts, lastRead: seq}); err != nil {
		return nil, err
	}
	if err := setRoom(w, c.Room, rec); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: opCreate, seq: seq, ts: ts, user: c.Owner, room: c.Room, rec: rec}), nil
}

// applyDelete marks the room deleted and removes its members. Its events stay
// until Compact purges them (a room's events are unbounded; one batch must
// not be); firstRetained moves past them so no read returns them.
func applyDelete(w state.Writer, c DeleteRoom) ([]byte, error) {
	rec, refusal, err := commandRoom(w, c.Room, c.User)
	if err != nil || refusal != nil {
		return refusal, err
	}
	if !c.Admin && !ident.EqualFold(c.User, rec.owner) {
		return refuse(statusForbidden, "only the owner of room %q or an admin may delete it", c.Room), nil
	}
	if ref := holdRule(c.Room, rec, "it cannot be deleted"); ref != nil {
		return ref, nil
	}
	if err := deleteRoomKeys(w, c.Room, 'm', banPrefix, mutePrefix, invitePrefix); err != nil {
		return nil, err
	}
	if err := deleteHooks(w, c.Room); err != nil { // hooks.go
		return nil, err
	}
	if err := deleteRoomKeys(w, c.Room, outHookPrefix, deliveryPrefix); err != nil { // outhooks.go
		return nil, err
	}
	rec.deleted, rec.members, rec.passwordHash, rec.settings = true, 0, "", roomSettings{}
	rec.firstRetained = rec.lastSeq + 1
	if err := setRoom(w, c.Room, rec); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: opDelete}), nil
}

func applyJoin(w state.Writer, meta state.Meta, c Join) ([]byte, error) {
	rec, refusal, err := commandRoom(w, c.Room, c.User)
	if err != nil || refusal != nil {
		return refusal, err
	}
	m, member, err := getMember(w, c.Room, c.User)
	if err != nil {
		return nil, err
	}
	if member {
		return encodeOK(okResult{op: opJoin, user: m.name, room: c.Room, rec: rec}), nil
	}
	ref, invited, err := joinRules(w, c.Room, c.User, meta.TimeMs)
	if ref != nil || err != nil {
		return ref, err
	}
	if rec.private && !invited && rec.passwordHash == "" {
		return refuse(statusForbidden, "room %q is invitation-only: ask its owner or a moderator for an invitation", c.Room), nil
	}
	if rec.private && !invited {
		if c.PasswordHash == "" {
			return refuse(statusForbidden, "room %q is private: a password is needed to join", c.Room), nil
		}
		if c.PasswordHash != rec.passwordHash {
			return refuse(statusForbidden, "wrong password for room %q", c.Room), nil
		}
	}
	if rec.members >= rec.maxMembers {
		return refuse(statusConflict, "room %q is full (member limit %d)", c.Room, rec.maxMembers), nil
	}
	if invited {
		if err := deleteKey(w, sanctionKey(c.Room, invitePrefix, c.User)); err != nil {
			return nil, err
		}
	}
	seq, ts, err := appendEventTo(w, meta, c.Room, rec, &eventRecord{kind: evJoin, sender: c.User})
	if err != nil {
		return nil, err
	}
	rec.members++
	if err := setMember(w, c.Room, memberRecord{name: c.User, joinedAt: ts, lastRead: seq}); err != nil {
		return nil, err
	}
	if err := setRoom(w, c.Room, rec); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: opJoin, seq: seq, ts: ts, user: c.User, room: c.Room, rec: rec}), nil
}

// applyLeave removes the user from the room. Leaving a room one is not a
// member of changes nothing and succeeds, like joining twice.
func applyLeave(w state.Writer, meta state.Meta, c Leave) ([]byte, error) {
	rec, refusal, err := commandRoom(w, c.Room, c.User)
	if err != nil || refusal != nil {
		return refusal, err
	}
	m, member, err := getMember(w, c.Room, c.User)
	if err != nil {
		return nil, err
	}
	if !member {
		return encodeOK(okResult{op: opLeave, user: c.User, room: c.Room, rec: rec}), nil
	}
	k := memberKey(c.Room, c.User)
	if err := w.Delete(k); err != nil {
		return nil, fmt.Errorf("chat: delete %q: %w", k, err)
	}
	seq, ts, err := appendEventTo(w, meta, c.Room, rec, &eventRecord{kind: evLeave, sender: m.name})
	if err != nil {
		return nil, err
	}
	rec.members--
	if err := setRoom(w, c.Room, rec); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: opLeave, seq: seq, ts: ts, user: m.name, room: c.Room, rec: rec}), nil
}

// applyMarkRead raises the user's read marker to the command's seq, capped at
// the room's last seq. A marker never goes back, so a late or replayed mark
// from another device cannot undo a newer one.
func applyMarkRead(w state.Writer, c MarkRead) ([]byte, error) {
	rec, refusal, err := commandRoom(w, c.Room, c.User)
	if err != nil || refusal != nil {
		return refusal, err
	}
	m, member, err := getMember(w, c.Room, c.User)
	if err != nil {
		return nil, err
	}
	if !member {
		return refuse(statusForbidden, "you are not a member of room %q", c.Room), nil
	}
	if seq := min(c.Seq, rec.lastSeq); seq > m.lastRead {
		m.lastRead = seq
		if err := setMember(w, c.Room, m); err != nil {
			return nil, err
		}
	}
	return encodeOK(okResult{op: opMarkRead, user: m.name, n: m.lastRead}), nil
}

// resolveRecipients returns a whisper's recipients as the room spells them,
// without repeats, in the order given; a refusal when one is not a member.
func resolveRecipients(r state.Reader, room string, to []string) ([]string, []byte, error) {
	if len(to) == 0 {
		return nil, nil, nil
	}
	out := make([]string, 0, len(to))
	seen := make(map[string]bool, len(to))
	for _, t := range to {
		if !ident.ValidUsername(t) {
			return nil, refuse(statusInvalid, "to: %q is not a valid username", clip(t)), nil
		}
		if seen[ident.Fold(t)] {
			continue
		}
		seen[ident.Fold(t)] = true
		m, member, err := getMember(r, room, t)
		if err != nil {
			return nil, nil, err
		}
		if !member {
			return nil, refuse(statusInvalid, "to: %q is not a member of room %q", t, room), nil
		}
		out = append(out, m.name)
	}
	return out, nil, nil
}

// eventTs returns the time of the stored event v under k.
func eventTs(k, v []byte) (int64, error) {
	d := decoder{b: v}
	d.byte1()
	ts := d.varint()
	if d.err != nil {
		return 0, fmt.Errorf("chat: corrupt event under %q: %w", k, d.err)
	}
	return ts, nil
}

package chat

import (
	"fmt"
	"slices"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// Bounds Apply enforces on every replica alike.
const (
	// MaxReactionKinds is the most different emoji on one message.
	MaxReactionKinds = 32
	// MaxEmoji is the longest emoji or :shortcode: in bytes.
	MaxEmoji = 64
	// InboxSize is how many entries a user's mention inbox keeps; older
	// ones are dropped (GET /mentions reads the rooms, not the inbox).
	InboxSize = 256
)

// loadMessage reads message seq of room for user: a refusal when there is no
// such message (or it is a whisper user is not part of, unless anyone is
// set), or the seq names another kind of event.
func loadMessage(r state.Reader, room string, rec *roomRecord, seq uint64, user string, anyone bool) (*eventRecord, []byte, error) {
	missing := refuse(statusNotFound, "no message with seq %d in room %q", seq, room)
	if seq == 0 || seq < rec.firstRetained || seq > rec.lastSeq {
		return nil, missing, nil
	}
	msg, err := getEvent(r, room, seq)
	if err != nil || msg == nil {
		return nil, missing, err
	}
	if !msg.isMessage() {
		return nil, refuse(statusNotFound, "seq %d of room %q is a %s event, not a message", seq, room, kindNames[msg.kind]), nil
	}
	if !anyone && !msg.involves(user) {
		return nil, missing, nil
	}
	return msg, nil, nil
}

// involves reports whether user may see the message: anyone for a message,
// the sender and recipients for a whisper.
func (e *eventRecord) involves(user string) bool {
	if len(e.to) == 0 || ident.EqualFold(e.sender, user) {
		return true
	}
	return slices.ContainsFunc(e.to, func(t string) bool { return ident.EqualFold(t, user) })
}

// participants returns who may see changes to msg: nobody in particular
// (everyone) for a message, its sender and recipients for a whisper.
func (e *eventRecord) participants() []string {
	if len(e.to) == 0 {
		return nil
	}
	return append([]string{e.sender}, e.to...)
}

// memberRoom loads a command's room and checks that user is a member
// (refusal forbidden with verb in its message otherwise).
func memberRoom(r state.Reader, room, user, verb string) (*roomRecord, memberRecord, []byte, error) {
	rec, refusal, err := commandRoom(r, room, user)
	if err != nil || refusal != nil {
		return nil, memberRecord{}, refusal, err
	}
	m, member, err := getMember(r, room, user)
	if err != nil {
		return nil, memberRecord{}, nil, err
	}
	if !member {
		return nil, memberRecord{}, refuse(statusForbidden, "join room %q to %s", room, verb), nil
	}
	return rec, m, nil, nil
}

func applyPost(w state.Writer, meta state.Meta, c Post, op byte) ([]byte, error) {
	if c.Text == "" && len(c.Files) == 0 {
		return refuse(statusInvalid, "text is empty"), nil
	}
	rec, sender, refusal, err := memberRoom(w, c.Room, c.User, "post in it")
	if err != nil || refusal != nil {
		return refusal, err
	}
	if ref, err := postRules(w, c.Room, rec, &sender, meta.TimeMs); ref != nil || err != nil {
		return ref, err
	}
	to, ref, err := resolveRecipients(w, c.Room, c.To)
	if ref != nil || err != nil {
		return ref, err
	}
	ev := &eventRecord{kind: evPost, sender: sender.name, to: to, text: c.Text}
	var files []*fileRecord
	if len(c.Files) > 0 { // apply_file.go
		if ev.files, files, ref, err = postFiles(w, c.Room, sender.name, c.Files); ref != nil || err != nil {
			return ref, err
		}
		ev.flags |= msgFiles
	}
	var root *eventRecord
	if c.ReplyTo != 0 {
		if root, ref, err = threadRoot(w, c.Room, rec, c.ReplyTo, sender.name); ref != nil || err != nil {
			return ref, err
		}
		ev.replyTo = c.ReplyTo
		if root != nil && root.replyTo != 0 {
			ev.replyTo = root.replyTo
			if root, err = getEvent(w, c.Room, root.replyTo); err != nil {
				return nil, err
			}
		}
	}
	if c.MentionRoom {
		ev.flags |= msgMentionRoom
	}
	if c.MentionHere {
		ev.flags |= msgMentionHere
	}
	if ev.mentions, err = resolveMentions(w, c, to, sender.name); err != nil {
		return nil, err
	}
	seq, ts, err := appendEventTo(w, meta, c.Room, rec, ev)
	if err != nil {
		return nil, err
	}
	if err := indexPost(w, c.Room, seq, ts, ev, root); err != nil {
		return nil, err
	}
	if err := attachFiles(w, c.Room, seq, ts, ev.files, files); err != nil {
		return nil, err
	}
	if err := queueOutgoing(w, c.Room, seq, ev); err != nil { // outhooks.go
		return nil, err
	}
	notified, err := notifiedBy(w, c.Room, ev)
	if err != nil {
		return nil, err
	}
	// Posting marks the room read up to one's own message, as chat clients
	// do, so one's own posts never count as unread.
	sender.lastRead = seq
	if err := setMember(w, c.Room, sender); err != nil {
		return nil, err
	}
	if err := setRoom(w, c.Room, rec); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: op, seq: seq, ts: ts, user: sender.name, names: notified}), nil
}

// threadRoot loads the message a reply answers; it must be visible to the
// sender and not deleted.
func threadRoot(r state.Reader, room string, rec *roomRecord, seq uint64, user string) (*eventRecord, []byte, error) {
	msg, ref, err := loadMessage(r, room, rec, seq, user, false)
	if err != nil {
		return nil, nil, err
	}
	if ref != nil {
		return nil, append([]byte{ref[0]}, "reply_to: "+string(ref[1:])...), nil
	}
	if msg.flags&msgDeleted != 0 {
		return nil, refuse(statusInvalid, "reply_to: message %d was deleted", seq), nil
	}
	return msg, nil, nil
}

// indexPost writes the keys a new message implies: the root's reply count
// and time, the thread key, the mention keys.
func indexPost(w state.Writer, room string, seq uint64, ts int64, ev *eventRecord, root *eventRecord) error {
	if ev.replyTo != 0 {
		if root != nil {
			root.replyCount++
			root.lastReplyAt = ts
			if err := setEvent(w, room, ev.replyTo, root); err != nil {
				return err
			}
		}
		if err := w.Set(threadKey(room, ev.replyTo, seq), nil); err != nil {
			return fmt.Errorf("chat: write thread key: %w", err)
		}
	}
	for _, k := range mentionKeys(room, seq, ev) {
		if err := w.Set(k, nil); err != nil {
			return fmt.Errorf("chat: write mention key: %w", err)
		}
	}
	return nil
}

// derivedKeys returns the keys a stored message implies besides its own:
// thread, pin and mention keys. Deleting or compacting it deletes them.
func derivedKeys(room string, seq uint64, ev *eventRecord) [][]byte {
	if isModeration(ev.kind) {
		return [][]byte{logKey(room, seq)}
	}
	if ev.kind != evPost {
		return nil
	}
	keys := mentionKeys(room, seq, ev)
	if ev.replyTo != 0 {
		keys = append(keys, threadKey(room, ev.replyTo, seq))
	}
	if ev.flags&msgPinned != 0 {
		keys = append(keys, pinKey(room, seq))
	}
	return keys
}

// mentionKeys returns the mention keys of a message: one per mentioned
// member, and the room-wide one for @room outside whispers.
func mentionKeys(room string, seq uint64, ev *eventRecord) [][]byte {
	var keys [][]byte
	for _, m := range ev.mentions {
		keys = append(keys, mentionKey(room, m, seq))
	}
	if ev.flags&msgMentionRoom != 0 && len(ev.to) == 0 {
		keys = append(keys, mentionKey(room, roomWide, seq))
	}
	return keys
}

// resolveMentions returns the members a post mentions by name or as online
// for @here, as the room spells them, without repeats or the sender. In a
// whisper only its recipients can be mentioned.
func resolveMentions(r state.Reader, c Post, to []string, sender string) ([]string, error) {
	var out []string
	seen := map[string]bool{ident.Fold(sender): true}
	for _, name := range slices.Concat(c.Mentions, c.Here) {
		f := ident.Fold(name)
		if seen[f] || !ident.ValidUsername(name) {
			continue
		}
		seen[f] = true
		m, member, err := getMember(r, c.Room, name)
		if err != nil {
			return nil, err
		}
		if !member || (len(to) > 0 && !slices.ContainsFunc(to, func(t string) bool { return ident.EqualFold(t, name) })) {
			continue
		}
		out = append(out, m.name)
	}
	return out, nil
}

// notifiedBy returns whom a new message's mention inbox entries go to: the
// members it mentions and, for @room outside whispers, every other member.
func notifiedBy(r state.Reader, room string, ev *eventRecord) ([]string, error) {
	if ev.flags&msgMentionRoom == 0 || len(ev.to) > 0 {
		return ev.mentions, nil
	}
	var out []string
	var err error
	lo := membersPrefix(room)
	scanErr := r.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		var m memberRecord
		if m, err = decodeMember(k, v); err != nil {
			return false
		}
		if !ident.EqualFold(m.name, ev.sender) {
			out = append(out, m.name)
		}
		return true
	})
	if scanErr != nil {
		return nil, fmt.Errorf("chat: scan members of %q: %w", room, scanErr)
	}
	return out, err
}

// memberMessage loads message seq of a command's room for user, who must be
// a member (verb completes the refusal) and may see it; a deleted message is
// refused too.
func memberMessage(r state.Reader, room, user string, seq uint64, verb string) (*roomRecord, memberRecord, *eventRecord, []byte, error) {
	rec, m, refusal, err := memberRoom(r, room, user, verb)
	if err != nil || refusal != nil {
		return nil, m, nil, refusal, err
	}
	msg, ref, err := loadMessage(r, room, rec, seq, user, false)
	if err != nil || ref != nil {
		return nil, m, nil, ref, err
	}
	if msg.flags&msgDeleted != 0 {
		return nil, m, nil, refuse(statusInvalid, "message %d was deleted", seq), nil
	}
	return rec, m, msg, nil, nil
}

func applyEdit(w state.Writer, meta state.Meta, c Edit) ([]byte, error) {
	if c.Text == "" {
		return refuse(statusInvalid, "text is empty"), nil
	}
	rec, m, msg, refusal, err := memberMessage(w, c.Room, c.User, c.Seq, "edit messages in it")
	if refusal == nil && err == nil {
		refusal, err = muteRule(w, c.Room, c.User, meta.TimeMs)
	}
	switch {
	case err != nil || refusal != nil:
		return refusal, err
	case !ident.EqualFold(msg.sender, c.User):
		return refuse(statusForbidden, "only its author may edit message %d", c.Seq), nil
	case rec.settings.legalHold:
		return holdRule(c.Room, rec, "its messages cannot be edited"), nil
	case c.Windowed && meta.TimeMs > msg.ts && uint64(meta.TimeMs-msg.ts) > c.WindowMs:
		return refuse(statusForbidden, "message %d can no longer be edited: the edit window of %d s is over", c.Seq, c.WindowMs/1000), nil
	}
	seq, ts, err := appendEventTo(w, meta, c.Room, rec, &eventRecord{kind: evEdit, sender: m.name, to: msg.participants(), target: c.Seq})
	if err != nil {
		return nil, err
	}
	msg.text, msg.editedAt = c.Text, ts
	if err := setEvent(w, c.Room, c.Seq, msg); err != nil {
		return nil, err
	}
	if err := setRoom(w, c.Room, rec); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: opEdit, seq: seq, ts: ts, user: m.name}), nil
}

// applyRemove deletes a message: its text, mentions and reactions leave the
// store (its record becomes a tombstone that keeps the sender, time and
// thread) and a delete event is appended. Deleting it again changes nothing.
func applyRemove(w state.Writer, meta state.Meta, c Remove) ([]byte, error) {
	rec, refusal, err := commandRoom(w, c.Room, c.User)
	if err != nil || refusal != nil {
		return refusal, err
	}
	a, err := actorOf(w, c.Room, rec, c.User, c.Admin)
	if err != nil {
		return nil, err
	}
	moderator := a.level >= levelModerator
	msg, ref, err := loadMessage(w, c.Room, rec, c.Seq, c.User, moderator)
	switch {
	case ref != nil || err != nil:
		return ref, err
	case !moderator && !ident.EqualFold(msg.sender, c.User):
		// The text of the build before moderators: a refusal is stored
		// with its dedup key, so old and new replicas must word it alike.
		return refuse(statusForbidden, "only its author, the owner of room %q or an admin may delete message %d", c.Room, c.Seq), nil
	case msg.flags&msgDeleted != 0:
		return encodeOK(okResult{op: opRemove, user: c.User}), nil
	case rec.settings.legalHold:
		return holdRule(c.Room, rec, "its messages cannot be deleted"), nil
	}
	for _, k := range derivedKeys(c.Room, c.Seq, msg) {
		if msg.replyTo != 0 && string(k) == string(threadKey(c.Room, msg.replyTo, c.Seq)) {
			continue // the tombstone stays in its thread
		}
		if err := w.Delete(k); err != nil {
			return nil, fmt.Errorf("chat: delete %q: %w", k, err)
		}
	}
	if err := removeFiles(w, c.Room, msg); err != nil { // apply_file.go
		return nil, err
	}
	who := c.User
	if m, member, err := getMember(w, c.Room, c.User); err != nil {
		return nil, err
	} else if member {
		who = m.name
	}
	seq, ts, err := appendEventTo(w, meta, c.Room, rec, &eventRecord{kind: evDelete, sender: who, to: msg.participants(), target: c.Seq})
	if err != nil {
		return nil, err
	}
	tomb := &eventRecord{kind: evPost, ts: msg.ts, sender: msg.sender, to: msg.to, flags: msgDeleted,
		replyTo: msg.replyTo, replyCount: msg.replyCount, lastReplyAt: msg.lastReplyAt}
	if err := setEvent(w, c.Room, c.Seq, tomb); err != nil {
		return nil, err
	}
	if err := setRoom(w, c.Room, rec); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: opRemove, seq: seq, ts: ts, user: who}), nil
}

func applyReact(w state.Writer, meta state.Meta, c React) ([]byte, error) {
	if len(c.Emoji) > MaxEmoji {
		return refuse(statusInvalid, "emoji is longer than %d bytes", MaxEmoji), nil
	}
	rec, m, msg, refusal, err := memberMessage(w, c.Room, c.User, c.Seq, "react in it")
	if refusal == nil && err == nil {
		refusal, err = muteRule(w, c.Room, c.User, meta.TimeMs)
	}
	if err != nil || refusal != nil {
		return refusal, err
	}
	i := slices.IndexFunc(msg.reactions, func(r reactionRec) bool { return r.emoji == c.Emoji })
	mine := i >= 0 && slices.ContainsFunc(msg.reactions[i].users, func(u string) bool { return ident.EqualFold(u, m.name) })
	kind := evReact
	switch {
	case c.Undo && !mine, !c.Undo && mine:
		return encodeOK(okResult{op: opReact, user: m.name}), nil // nothing to change
	case c.Undo:
		kind = evUnreact
		msg.reactions[i].users = slices.DeleteFunc(msg.reactions[i].users, func(u string) bool { return ident.EqualFold(u, m.name) })
		if len(msg.reactions[i].users) == 0 {
			msg.reactions = slices.Delete(msg.reactions, i, i+1)
		}
	case i >= 0:
		msg.reactions[i].users = append(msg.reactions[i].users, m.name)
	case len(msg.reactions) >= MaxReactionKinds:
		return refuse(statusConflict, "message %d already has %d different reactions, the most allowed", c.Seq, MaxReactionKinds), nil
	default:
		msg.reactions = append(msg.reactions, reactionRec{emoji: c.Emoji, users: []string{m.name}})
	}
	return appendChange(w, meta, c.Room, rec, msg, c.Seq, &eventRecord{kind: kind, sender: m.name, arg: c.Emoji}, opReact)
}

// appendChange appends the change ev to msg (seq target), stores msg and
// the room, and returns the OK result of op.
func appendChange(w state.Writer, meta state.Meta, room string, rec *roomRecord, msg *eventRecord, target uint64, ev *eventRecord, op byte) ([]byte, error) {
	ev.to, ev.target = msg.participants(), target
	seq, ts, err := appendEventTo(w, meta, room, rec, ev)
	if err != nil {
		return nil, err
	}
	if err := setEvent(w, room, target, msg); err != nil {
		return nil, err
	}
	if err := setRoom(w, room, rec); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: op, seq: seq, ts: ts, user: ev.sender}), nil
}

func applyPin(w state.Writer, meta state.Meta, c Pin) ([]byte, error) {
	rec, m, msg, refusal, err := memberMessage(w, c.Room, c.User, c.Seq, "pin messages in it")
	if refusal == nil && err == nil {
		// A pin is an event every member sees: the muted may not pin or
		// unpin. Mutes exist only once the cluster speaks
		// ModerationProtocol, so older replicas never apply a pin by a
		// muted member.
		refusal, err = muteRule(w, c.Room, c.User, meta.TimeMs)
	}
	switch {
	case err != nil || refusal != nil:
		return refusal, err
	case len(msg.to) > 0:
		return refuse(statusInvalid, "message %d is a whisper: only messages to everyone can be pinned", c.Seq), nil
	case c.Undo == (msg.flags&msgPinned == 0):
		return encodeOK(okResult{op: opPin, user: m.name}), nil // already so
	}
	k, kind := pinKey(c.Room, c.Seq), evPin
	if c.Undo {
		msg.flags &^= msgPinned
		kind = evUnpin
		err = w.Delete(k)
	} else {
		msg.flags |= msgPinned
		err = w.Set(k, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("chat: write %q: %w", k, err)
	}
	return appendChange(w, meta, c.Room, rec, msg, c.Seq, &eventRecord{kind: kind, sender: m.name}, opPin)
}

// applyNotify appends a mention entry to the user's inbox, creating it on
// first use, and drops the oldest entry past InboxSize.
func applyNotify(w state.Writer, meta state.Meta, c Notify) ([]byte, error) {
	if ref := checkNames(c.Room, c.Sender); ref != nil {
		return ref, nil
	}
	if !ident.ValidUsername(c.User) || c.Seq == 0 {
		return refuse(statusInvalid, "notify: bad user %q or seq %d", clip(c.User), c.Seq), nil
	}
	inbox := InboxName(c.User)
	rec, err := getRoom(w, inbox)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		rec = &roomRecord{owner: c.User, private: true, maxMembers: 1, firstRetained: 1, createdAt: meta.TimeMs}
	}
	seq, ts, err := appendEventTo(w, meta, inbox, rec, &eventRecord{kind: evMention, sender: c.Sender, target: c.Seq, arg: c.Room})
	if err != nil {
		return nil, err
	}
	for rec.lastSeq-rec.firstRetained+1 > InboxSize {
		if err := w.Delete(eventKey(inbox, rec.firstRetained)); err != nil {
			return nil, fmt.Errorf("chat: trim inbox %q: %w", inbox, err)
		}
		rec.firstRetained++
	}
	if err := setRoom(w, inbox, rec); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: opNotify, seq: seq, ts: ts, user: c.User}), nil
}

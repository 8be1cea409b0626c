package chat

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// Stored event kinds, the first byte of an event record. The legacy kinds
// m, w, j and l hold kind, varint ts, sender, uvarint len(to), each to, and
// the text (the rest); j and l have no text. Every kind has the time second,
// so retention reads it without decoding the rest.
const (
	evMessage byte = 'm' // legacy message (before edits, reactions, threads)
	evWhisper byte = 'w' // legacy whisper
	evJoin    byte = 'j'
	evLeave   byte = 'l'
	// evPost is a message, or a whisper when to is not empty, with its
	// current state: kind, varint ts, sender, to, flags (msg*), uvarint
	// replyTo, varint editedAt, uvarint replyCount, varint lastReplyAt,
	// uvarint len(mentions), each mention, uvarint len(reactions), each
	// reaction (emoji, uvarint len(users), each user), with msgFiles its
	// files (appendFileRefs), text (the rest). A deleted message keeps its
	// sender and time and nothing else.
	evPost byte = 'M'
	// Changes to a message (its seq is target) are events of their own:
	// kind, varint ts, sender (who acted), to (the whisper's participants
	// when the target is a whisper), uvarint target, arg (the emoji of a
	// reaction). They hold no text: the target's record is the one home of
	// the current text, so deleting a message removes its text everywhere.
	evEdit    byte = 'e'
	evDelete  byte = 'x'
	evReact   byte = 'r'
	evUnreact byte = 'u'
	evPin     byte = 'p'
	evUnpin   byte = 'q'
	// evMention is an entry of a user's mention inbox (see Notify): the
	// change layout, target the message's seq and arg the room it is in.
	evMention byte = 'n'
	// Moderation events (isModeration): kind, varint ts, sender (who
	// acted), to (empty), role byte (evRole), varint until (evBan, evMute;
	// 0: for good), arg (the user acted on; for evSettings the names of the
	// settings changed, comma-separated), text (the reason, the rest).
	evRole     byte = 'R'
	evInvite   byte = 'I'
	evUninvite byte = 'i'
	evKick     byte = 'K'
	evBan      byte = 'B'
	evUnban    byte = 'b'
	evMute     byte = 'Z'
	evUnmute   byte = 'z'
	evSettings byte = 'S'
	// Legal holds (LegalHold): the moderation layout, arg empty.
	evHold   byte = 'H'
	evUnhold byte = 'h'
)

// Message record flags.
const (
	msgDeleted     byte = 1 << 0
	msgPinned      byte = 1 << 1
	msgMentionRoom byte = 1 << 2 // the text mentions @room
	msgMentionHere byte = 1 << 3 // the text mentions @here
	msgFiles       byte = 1 << 4 // files follow the reactions (files.go)
	msgFlags            = msgDeleted | msgPinned | msgMentionRoom | msgMentionHere | msgFiles
)

var kindNames = map[byte]string{
	evMessage: KindMessage, evWhisper: KindWhisper, evJoin: KindJoin, evLeave: KindLeave,
	evEdit: KindEdit, evDelete: KindDelete, evReact: KindReact, evUnreact: KindUnreact,
	evPin: KindPin, evUnpin: KindUnpin, evMention: KindMention,
	evRole: KindRole, evInvite: KindInvite, evUninvite: KindUninvite, evKick: KindKick,
	evBan: KindBan, evUnban: KindUnban, evMute: KindMute, evUnmute: KindUnmute, evSettings: KindSettings,
	evHold: KindLegalHold, evUnhold: KindLegalHoldLifted,
}

// isModeration reports whether kind is a moderation event, listed in the
// room's moderation log.
func isModeration(kind byte) bool {
	switch kind {
	case evRole, evInvite, evUninvite, evKick, evBan, evUnban, evMute, evUnmute, evSettings, evHold, evUnhold:
		return true
	}
	return false
}

// isChange reports whether kind is a change to another event (target set).
func isChange(kind byte) bool {
	switch kind {
	case evEdit, evDelete, evReact, evUnreact, evPin, evUnpin, evMention:
		return true
	}
	return false
}

// reactionRec is one emoji's reactions to a message, users in the order
// they reacted.
type reactionRec struct {
	emoji string
	users []string
}

// eventRecord is a stored event of any kind; the fields a kind does not
// carry stay zero.
type eventRecord struct {
	kind   byte
	ts     int64
	sender string
	to     []string
	text   string
	// Messages (evPost).
	flags       byte
	replyTo     uint64 // the thread's root; 0 outside threads
	editedAt    int64
	replyCount  uint64
	lastReplyAt int64
	mentions    []string // members mentioned by name or as online for @here
	reactions   []reactionRec
	files       []fileRef // with msgFiles
	// Changes.
	target uint64
	arg    string
	// Moderation events: the role given, when a ban or mute ends.
	role  byte
	until int64
}

// isMessage reports whether the record is a message or whisper.
func (e *eventRecord) isMessage() bool {
	return e.kind == evPost || e.kind == evMessage || e.kind == evWhisper
}

// encodeEvent returns the stored form of e. Legacy kinds are never written
// again: a legacy message that changes is stored as evPost.
func encodeEvent(e *eventRecord) []byte {
	n := 32 + len(e.sender) + len(e.text) + len(e.arg)
	for _, t := range e.to {
		n += 1 + len(t)
	}
	b := make([]byte, 0, n)
	kind := e.kind
	if kind == evMessage || kind == evWhisper {
		kind = evPost
	}
	b = append(b, kind)
	b = binary.AppendVarint(b, e.ts)
	b = wire.AppendString(b, e.sender)
	b = appendNames(b, e.to)
	switch {
	case kind == evPost:
		b = append(b, e.flags)
		b = binary.AppendUvarint(b, e.replyTo)
		b = binary.AppendVarint(b, e.editedAt)
		b = binary.AppendUvarint(b, e.replyCount)
		b = binary.AppendVarint(b, e.lastReplyAt)
		b = appendNames(b, e.mentions)
		b = binary.AppendUvarint(b, uint64(len(e.reactions)))
		for _, r := range e.reactions {
			b = appendNames(wire.AppendString(b, r.emoji), r.users)
		}
		if e.flags&msgFiles != 0 {
			b = appendFileRefs(b, e.files)
		}
		return append(b, e.text...)
	case isChange(kind):
		b = binary.AppendUvarint(b, e.target)
		return wire.AppendString(b, e.arg)
	case isModeration(kind):
		b = binary.AppendVarint(append(b, e.role), e.until)
		b = wire.AppendString(b, e.arg)
	}
	return append(b, e.text...)
}

func appendNames(b []byte, names []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, t := range names {
		b = wire.AppendString(b, t)
	}
	return b
}

// names reads a uvarint count and that many non-empty strings.
func (d *decoder) names() []string {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b))/2 { // every name takes at least 2 bytes
		d.fail("%d names in %d bytes", n, len(d.b))
	}
	if d.err != nil || n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.name()
	}
	return out
}

// decodeEventRecord decodes the event stored under k.
func decodeEventRecord(k, v []byte) (*eventRecord, error) {
	d := decoder{b: v}
	e := &eventRecord{kind: d.byte1(), ts: d.varint(), sender: d.name(), to: d.names()}
	switch {
	case d.err != nil:
	case e.kind == evPost:
		e.flags = d.flags(msgFlags)
		e.replyTo, e.editedAt, e.replyCount, e.lastReplyAt = d.uvarint(), d.varint(), d.uvarint(), d.varint()
		e.mentions = d.names()
		n := d.uvarint()
		if d.err == nil && n > uint64(len(d.b))/2 {
			d.fail("%d reactions in %d bytes", n, len(d.b))
		}
		for i := uint64(0); d.err == nil && i < n; i++ {
			e.reactions = append(e.reactions, reactionRec{emoji: d.name(), users: d.names()})
		}
		if e.flags&msgFiles != 0 {
			e.files = d.fileRefs()
		}
		e.text, d.b = string(d.b), nil
	case isChange(e.kind):
		e.target, e.arg = d.uvarint(), d.str()
	case isModeration(e.kind):
		e.role, e.until, e.arg = d.byte1(), d.varint(), d.str()
		e.text, d.b = string(d.b), nil
	case kindNames[e.kind] != "":
		e.text, d.b = string(d.b), nil
	default:
		d.fail("unknown event kind %#x", e.kind)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("chat: corrupt event under %q: %w", k, d.err)
	}
	return e, nil
}

// seqOfEventKey returns the seq of room's event key k.
func seqOfEventKey(room string, k []byte) (uint64, error) {
	prefixLen := len(keyPrefix) + len(room) + 3 // "c/" room "/e/"
	if len(k) != prefixLen+8 {
		return 0, fmt.Errorf("chat: corrupt event key %q", k)
	}
	return binary.BigEndian.Uint64(k[prefixLen:]), nil
}

// decodeEvent decodes the event stored under k in room into its public form
// (changes without their target: see hydrate).
func decodeEvent(room string, k, v []byte) (Event, error) {
	seq, err := seqOfEventKey(room, k)
	if err != nil {
		return Event{}, err
	}
	rec, err := decodeEventRecord(k, v)
	if err != nil {
		return Event{}, err
	}
	return rec.view(room, seq), nil
}

// getEvent reads room's event seq; nil when it is not stored.
func getEvent(r state.Reader, room string, seq uint64) (*eventRecord, error) {
	k := eventKey(room, seq)
	v, found, err := r.Get(k)
	if err != nil {
		return nil, fmt.Errorf("chat: read %q: %w", k, err)
	}
	if !found {
		return nil, nil
	}
	return decodeEventRecord(k, v)
}

// MaxReactionUsers is how many users a reaction lists in its public form;
// its count is exact.
const MaxReactionUsers = 10

// view returns the public form of the record of room's event seq.
func (e *eventRecord) view(room string, seq uint64) Event {
	ev := Event{Room: room, Seq: seq, Ts: e.ts, Kind: kindNames[e.kind], Sender: e.sender, To: e.to, Text: e.text}
	switch {
	case e.isMessage():
		ev.Kind = KindMessage
		if len(e.to) > 0 {
			ev.Kind = KindWhisper
		}
		ev.ReplyTo, ev.EditedAt, ev.ReplyCount, ev.LastReplyAt = e.replyTo, e.editedAt, e.replyCount, e.lastReplyAt
		ev.Deleted, ev.Pinned = e.flags&msgDeleted != 0, e.flags&msgPinned != 0
		ev.MentionRoom, ev.MentionHere = e.flags&msgMentionRoom != 0, e.flags&msgMentionHere != 0
		ev.Mentions = e.mentions
		for _, r := range e.reactions {
			ev.Reactions = append(ev.Reactions, Reaction{Emoji: r.emoji, Count: len(r.users), Users: r.users[:min(len(r.users), MaxReactionUsers)]})
		}
		for _, f := range e.files {
			ev.Files = append(ev.Files, f.info(room))
		}
	case e.kind == evMention:
		ev.Target, ev.Origin = e.target, e.arg
	case isModeration(e.kind):
		ev.moderationView(e)
	case isChange(e.kind):
		ev.Target = e.target
		if e.kind == evReact || e.kind == evUnreact {
			ev.Emoji = e.arg
		}
	}
	return ev
}

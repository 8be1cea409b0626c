package chat

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// MaxPins is the most pinned messages GET /pins returns (the latest).
const MaxPins = 500

// seqsUnder returns the seqs that end the keys in [lo, PrefixEnd(prefix)),
// keys being prefix and an 8-byte seq, at most limit of them (0: no limit).
func seqsUnder(r state.Reader, prefix, lo []byte, limit int) ([]uint64, error) {
	var seqs []uint64
	bad := false
	err := r.Scan(lo, state.PrefixEnd(prefix), func(k, _ []byte) bool {
		if len(k) != len(prefix)+8 {
			bad = true
			return false
		}
		seqs = append(seqs, binary.BigEndian.Uint64(k[len(prefix):]))
		return limit == 0 || len(seqs) < limit
	})
	if err == nil && bad {
		err = fmt.Errorf("chat: corrupt index key under %q", prefix)
	}
	return seqs, err
}

// countMentions returns how many messages of room after m's read marker
// mention m's user: by name or @here (their own keys) or @room (the
// room-wide keys of messages others sent).
func countMentions(r state.Reader, room string, m memberRecord, lastSeq uint64) (int, error) {
	if m.lastRead >= lastSeq {
		return 0, nil
	}
	own, err := seqsUnder(r, mentionsPrefix(room, m.name), mentionKey(room, m.name, m.lastRead+1), 0)
	if err != nil {
		return 0, err
	}
	all, err := seqsUnder(r, mentionsPrefix(room, roomWide), mentionKey(room, roomWide, m.lastRead+1), 0)
	if err != nil {
		return 0, err
	}
	n := len(own)
	for _, seq := range all {
		if slices.Contains(own, seq) {
			continue
		}
		ev, err := getEvent(r, room, seq)
		if err != nil {
			return 0, err
		}
		if ev != nil && !ident.EqualFold(ev.sender, m.name) {
			n++
		}
	}
	return n, nil
}

// eventsAt returns room's events with the given seqs, as user may see them,
// skipping seqs below the retained history or no longer stored.
func eventsAt(r state.Reader, room string, rec *roomRecord, user string, seqs []uint64) ([]Event, error) {
	out := make([]Event, 0, len(seqs))
	for _, seq := range seqs {
		if seq < rec.firstRetained {
			continue
		}
		ev, err := getEvent(r, room, seq)
		if err != nil {
			return nil, err
		}
		if ev != nil {
			out = append(out, ev.view(room, seq))
		}
	}
	if err := hydrate(r, room, out); err != nil {
		return nil, err
	}
	for i := range out {
		out[i] = out[i].ViewFor(user)
	}
	return out, nil
}

// Message returns room's event seq as user may see it (a whisper to others
// is hidden), a message with its current state. errs.NotFound when there is
// no such event; CheckRead decides who may read.
func Message(r state.Reader, room, user string, seq uint64) (Event, error) {
	rec, err := checkRead(r, room, user)
	if err != nil {
		return Event{}, err
	}
	evs, err := eventsAt(r, room, rec, user, []uint64{seq})
	if err != nil {
		return Event{}, err
	}
	if len(evs) == 0 || seq > rec.lastSeq {
		return Event{}, errs.New(errs.NotFound, "no event with seq %d in room %q", seq, room)
	}
	return evs[0], nil
}

// ThreadPage is a page of a thread: its first message and replies in seq
// order.
type ThreadPage struct {
	Root    Event   `json:"root"`
	Replies []Event `json:"replies"`
}

// Thread returns the replies to message root of room with seq > after, at
// most limit (0: DefaultHistoryLimit), with the root as it is now. A root
// that is not a message user may see is errs.NotFound.
func Thread(r state.Reader, room, user string, root, after uint64, limit int) (ThreadPage, error) {
	limit, err := historyLimit(limit)
	if err != nil {
		return ThreadPage{}, err
	}
	rec, err := checkRead(r, room, user)
	if err != nil {
		return ThreadPage{}, err
	}
	msg, ref, err := loadMessage(r, room, rec, root, user, false)
	if err != nil {
		return ThreadPage{}, err
	}
	if ref != nil {
		_, err := DecodeResult(ref)
		return ThreadPage{}, err
	}
	if msg.replyTo != 0 {
		return ThreadPage{}, errs.New(errs.Invalid, "message %d is a reply in the thread of %d: ask for that thread", root, msg.replyTo)
	}
	seqs, err := seqsUnder(r, threadPrefix(room, root), threadKey(room, root, after+1), limit)
	if err != nil {
		return ThreadPage{}, err
	}
	replies, err := eventsAt(r, room, rec, user, seqs)
	if err != nil {
		return ThreadPage{}, err
	}
	return ThreadPage{Root: msg.view(room, root), Replies: replies}, nil
}

// Pins returns room's pinned messages in seq order, the latest MaxPins.
func Pins(r state.Reader, room, user string) ([]Event, error) {
	rec, err := checkRead(r, room, user)
	if err != nil {
		return nil, err
	}
	seqs, err := seqsUnder(r, pinsPrefix(room), pinsPrefix(room), 0)
	if err != nil {
		return nil, err
	}
	if len(seqs) > MaxPins {
		seqs = seqs[len(seqs)-MaxPins:]
	}
	return eventsAt(r, room, rec, user, seqs)
}

// MentionCursor is a position in a user's mentions across rooms, ordered by
// time, then room, then seq. Its text form is "ts:seq:room".
type MentionCursor struct {
	Ts   int64
	Seq  uint64
	Room string
}

// String returns the cursor's text form.
func (c MentionCursor) String() string {
	return strconv.FormatInt(c.Ts, 10) + ":" + strconv.FormatUint(c.Seq, 10) + ":" + c.Room
}

// ParseMentionCursor parses a cursor's text form (errs.Invalid naming
// "after" when malformed).
func ParseMentionCursor(s string) (MentionCursor, error) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) == 3 {
		ts, err1 := strconv.ParseInt(parts[0], 10, 64)
		seq, err2 := strconv.ParseUint(parts[1], 10, 64)
		if err1 == nil && err2 == nil && isCanonicalRoom(parts[2]) {
			return MentionCursor{Ts: ts, Seq: seq, Room: parts[2]}, nil
		}
	}
	return MentionCursor{}, errs.New(errs.Invalid, "after must be a cursor from a previous page (ts:seq:room)")
}

// cursorOf returns the cursor of a mentioning message.
func cursorOf(e Event) MentionCursor { return MentionCursor{Ts: e.Ts, Seq: e.Seq, Room: e.Room} }

// compareCursors orders cursors by time, room, seq.
func compareCursors(a, b MentionCursor) int {
	return cmp.Or(cmp.Compare(a.Ts, b.Ts), strings.Compare(a.Room, b.Room), cmp.Compare(a.Seq, b.Seq))
}

// MentionsOf returns the messages mentioning user in the rooms of a
// partition user is a member of, in cursor order: the first limit after
// after when it is set, else the latest limit. @room counts for messages
// posted since the user joined.
func MentionsOf(r state.Reader, user string, after *MentionCursor, limit int) ([]Event, error) {
	var out []Event
	err := forEachRoom(r, func(room string, rec *roomRecord) (bool, error) {
		if rec.deleted || isInbox(room) {
			return true, nil
		}
		m, member, err := getMember(r, room, user)
		if err != nil || !member {
			return err == nil, err
		}
		evs, err := roomMentions(r, room, rec, m)
		if err != nil {
			return false, err
		}
		for _, e := range evs {
			if after == nil || compareCursors(cursorOf(e), *after) > 0 {
				out = append(out, e)
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return PageMentions(out, after != nil, limit), nil
}

// PageMentions sorts mentions in cursor order and keeps the first limit
// (forward: the page after a cursor) or the last limit.
func PageMentions(evs []Event, forward bool, limit int) []Event {
	slices.SortFunc(evs, func(a, b Event) int { return compareCursors(cursorOf(a), cursorOf(b)) })
	if len(evs) > limit {
		if forward {
			evs = evs[:limit]
		} else {
			evs = evs[len(evs)-limit:]
		}
	}
	return evs
}

// roomMentions returns the retained messages of room mentioning m's user.
func roomMentions(r state.Reader, room string, rec *roomRecord, m memberRecord) ([]Event, error) {
	own, err := seqsUnder(r, mentionsPrefix(room, m.name), mentionsPrefix(room, m.name), 0)
	if err != nil {
		return nil, err
	}
	all, err := seqsUnder(r, mentionsPrefix(room, roomWide), mentionsPrefix(room, roomWide), 0)
	if err != nil {
		return nil, err
	}
	seqs := slices.Compact(slices.Sorted(slices.Values(slices.Concat(own, all))))
	evs, err := eventsAt(r, room, rec, m.name, seqs)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(evs, func(e Event) bool {
		return !slices.Contains(own, e.Seq) && (ident.EqualFold(e.Sender, m.name) || e.Ts < m.joinedAt)
	}), nil
}

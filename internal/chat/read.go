package chat

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// Room describes a room. It never carries the password hash.
type Room struct {
	Name       string `json:"name"`
	Owner      string `json:"owner"`
	Private    bool   `json:"private"`
	MaxMembers int    `json:"max_members"`
	// Members is the current number of members.
	Members   int   `json:"members"`
	CreatedAt int64 `json:"created_at"`
	// LastSeq is the seq of the latest event, 0 before the first.
	LastSeq uint64 `json:"last_seq"`
	// FirstRetainedSeq is the lowest seq still readable: 1 until retention
	// compaction removes events. A reader that last saw a seq below
	// FirstRetainedSeq-1 has missed events for good (ErrHistoryCompacted).
	FirstRetainedSeq uint64 `json:"first_retained_seq"`

	// InviteOnly says a private room has no password: only invited users
	// join it.
	InviteOnly bool `json:"invite_only"`
	// Topic and Description are free text set by the owner or a
	// moderator.
	Topic       string `json:"topic,omitempty"`
	Description string `json:"description,omitempty"`
	// Announcement rooms let only their owner and moderators post.
	Announcement bool `json:"announcement"`
	// SlowMode is the least time in seconds between two posts of one
	// member (moderators and the owner are exempt); 0 is off.
	SlowMode uint64 `json:"slow_mode"`
	// RetentionDays and RetentionMessages are the room's own retention: 0
	// follows the cluster's --history-retention (by age; there is no
	// default by count), RetentionForever keeps everything, otherwise the
	// events of that many days and the newest that many messages are kept.
	RetentionDays     int64 `json:"retention_days"`
	RetentionMessages int64 `json:"retention_messages"`
	// LegalHold says an admin suspended every deletion of the room's
	// history (see LegalHold).
	LegalHold bool `json:"legal_hold"`
}

// RoomSummary is a room as a user's room list shows it.
type RoomSummary struct {
	Room
	// Member is whether the user is a member.
	Member bool `json:"member"`
	// LastRead is the user's read marker (0 when not a member); LastSeq -
	// LastRead events are unread.
	LastRead uint64 `json:"last_read"`
	// Online is the number of members online; the chat package leaves it 0
	// and the presence layer fills it in.
	Online int `json:"online"`
	// UnreadMentions is the number of messages after LastRead that mention
	// the user (by name, @here or @room); moving the read marker clears it.
	UnreadMentions int `json:"unread_mentions"`
	// Role is the user's role in the room (owner, moderator, member);
	// empty when not a member.
	Role string `json:"role,omitempty"`
}

// Member is one member of a room.
type Member struct {
	Username string `json:"username"`
	// Online is filled in by the presence layer; the chat package leaves it
	// false.
	Online   bool  `json:"online"`
	JoinedAt int64 `json:"joined_at"`
	// Role is owner, moderator or member.
	Role string `json:"role"`
}

// Read limits for History.
const (
	DefaultHistoryLimit = 50
	MaxHistoryLimit     = 500
)

// CodeHistoryCompacted is the error code of ErrHistoryCompacted. The errs
// package has no code for it: the api package should answer it with 410 Gone
// and the stream layer send it as the frame
// {"type":"error","code":"history_compacted"}.
const CodeHistoryCompacted errs.Code = "history_compacted"

// ErrHistoryCompacted is the cause of the error History and EventsAfter
// return when asked for events after a seq older than the room's retained
// history: some events the caller has not seen are gone, and answering with
// the rest would be a silent gap. The error returned is an *errs.Error with
// code CodeHistoryCompacted whose message names the first retained seq; match
// it with errors.Is(err, ErrHistoryCompacted).
var ErrHistoryCompacted = errors.New("chat: history compacted")

func historyCompacted(room string, first uint64) error {
	return &errs.Error{
		Code: CodeHistoryCompacted,
		Message: fmt.Sprintf("events of room %q before seq %d were removed by the retention policy; resume after seq %d or load the latest page",
			room, first, first-1),
		Err: ErrHistoryCompacted,
	}
}

// view returns the public form of the record of the room name.
func (rec *roomRecord) view(name string) Room {
	return Room{
		Name:              name,
		Owner:             rec.owner,
		Private:           rec.private,
		MaxMembers:        int(min(rec.maxMembers, 1<<31)),
		Members:           int(min(rec.members, 1<<31)),
		CreatedAt:         rec.createdAt,
		LastSeq:           rec.lastSeq,
		FirstRetainedSeq:  rec.firstRetained,
		InviteOnly:        rec.private && rec.passwordHash == "",
		Topic:             rec.settings.topic,
		Description:       rec.settings.description,
		Announcement:      rec.settings.announcement,
		SlowMode:          rec.settings.slowModeSec,
		RetentionDays:     rec.settings.retention.days,
		RetentionMessages: rec.settings.retention.messages,
		LegalHold:         rec.settings.legalHold,
	}
}

// getRoom reads room's record; nil when the room has never existed.
// Deleted rooms are returned with deleted set.
func getRoom(r state.Reader, room string) (*roomRecord, error) {
	k := roomKey(room)
	v, found, err := r.Get(k)
	if err != nil {
		return nil, fmt.Errorf("chat: read %q: %w", k, err)
	}
	if !found {
		return nil, nil
	}
	return decodeRoom(k, v)
}

// liveRoom reads room's record and returns errs.NotFound when the room does
// not exist or was deleted.
func liveRoom(r state.Reader, room string) (*roomRecord, error) {
	rec, err := getRoom(r, room)
	if err != nil {
		return nil, err
	}
	if rec == nil || rec.deleted {
		return nil, errs.New(errs.NotFound, "room %q not found", room)
	}
	return rec, nil
}

// getMember reads user's membership of room; found is false when user is not
// a member.
func getMember(r state.Reader, room, user string) (m memberRecord, found bool, err error) {
	k := memberKey(room, user)
	v, found, err := r.Get(k)
	if err != nil {
		return memberRecord{}, false, fmt.Errorf("chat: read %q: %w", k, err)
	}
	if !found {
		return memberRecord{}, false, nil
	}
	m, err = decodeMember(k, v)
	return m, err == nil, err
}

// GetRoom reads the room named by its canonical name. found is false when it
// does not exist or was deleted.
func GetRoom(r state.Reader, room string) (Room, bool, error) {
	rec, err := getRoom(r, room)
	if err != nil || rec == nil || rec.deleted {
		return Room{}, false, err
	}
	return rec.view(room), true, nil
}

// IsDeleted reports whether room existed and was deleted (and not created
// again since).
func IsDeleted(r state.Reader, room string) (bool, error) {
	rec, err := getRoom(r, room)
	return rec != nil && rec.deleted, err
}

// forEachRoom calls fn with every room of the partition that has a record,
// deleted ones included, in key order. It skips from one room's prefix to the
// next, so it costs one short scan and one read per room, not a scan of
// every event. fn returns false to stop.
func forEachRoom(r state.Reader, fn func(room string, rec *roomRecord) (bool, error)) error {
	lo := []byte(keyPrefix)
	for {
		var room string
		var found, ok bool
		var key []byte
		if err := r.Scan(lo, []byte(roomsEnd), func(k, _ []byte) bool {
			found = true
			if room, ok = roomOfKey(k); !ok {
				key = bytes.Clone(k)
			}
			return false
		}); err != nil {
			return fmt.Errorf("chat: scan rooms: %w", err)
		}
		if !found {
			return nil
		}
		if !ok {
			return fmt.Errorf("chat: corrupt key %q in the chat range", key)
		}
		rec, err := getRoom(r, room)
		if err != nil {
			return err
		}
		if rec != nil {
			if more, err := fn(room, rec); err != nil || !more {
				return err
			}
		}
		lo = state.PrefixEnd(roomPrefix(room))
	}
}

// ListRooms returns the rooms of a partition visible to user, in name order:
// every public room and the private rooms user is a member of, with user's
// membership and read marker.
func ListRooms(r state.Reader, user string) ([]RoomSummary, error) {
	var out []RoomSummary
	err := forEachRoom(r, func(room string, rec *roomRecord) (bool, error) {
		if rec.deleted || isInbox(room) {
			return true, nil
		}
		m, member, err := getMember(r, room, user)
		if err != nil {
			return false, err
		}
		if rec.private && !member {
			return true, nil
		}
		sum := RoomSummary{Room: rec.view(room), Member: member, LastRead: m.lastRead}
		if member {
			sum.Role = roleOf(m, rec.owner)
			if sum.UnreadMentions, err = countMentions(r, room, m, rec.lastSeq); err != nil {
				return false, err
			}
		}
		out = append(out, sum)
		return true, nil
	})
	return out, err
}

// Members returns room's members in lower-cased username order.
// errs.NotFound when the room does not exist.
func Members(r state.Reader, room string) ([]Member, error) {
	rec, err := liveRoom(r, room)
	if err != nil {
		return nil, err
	}
	out := make([]Member, 0, rec.members)
	lo := membersPrefix(room)
	err = r.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		var m memberRecord
		if m, err = decodeMember(k, v); err != nil {
			return false
		}
		out = append(out, Member{Username: m.name, JoinedAt: m.joinedAt, Role: roleOf(m, rec.owner)})
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("chat: members of %q: %w", room, err)
	}
	return out, nil
}

// CheckRead returns the room if user may read its history and members:
// anyone may read a public room (joining it needs nothing, so reading first
// reveals nothing a join would not), only members a private one, and
// nobody banned from it while the ban lasts (by the reader's clock). It
// returns errs.NotFound when the room does not exist and errs.Forbidden
// when user may not read it. The stream layer applies the same rule to
// subscriptions.
func CheckRead(r state.Reader, room, user string) (Room, error) {
	rec, err := checkRead(r, room, user)
	if err != nil {
		return Room{}, err
	}
	return rec.view(room), nil
}

func checkRead(r state.Reader, room, user string) (*roomRecord, error) {
	return checkReadAt(r, room, user, time.Now().UnixMilli())
}

// checkReadAt is checkRead at time now (Unix ms), which decides whether a
// ban has ended.
func checkReadAt(r state.Reader, room, user string, now int64) (*roomRecord, error) {
	rec, err := liveRoom(r, room)
	if err != nil {
		return nil, err
	}
	if _, banned, err := activeSanction(r, room, banPrefix, user, now); err != nil || banned {
		if err != nil {
			return nil, err
		}
		return nil, errs.New(errs.Forbidden, "you are banned from room %q", room)
	}
	if rec.private {
		_, member, err := getMember(r, room, user)
		if err != nil {
			return nil, err
		}
		if !member {
			return nil, errs.New(errs.Forbidden, "room %q is private: join it to read it", room)
		}
	}
	return rec, nil
}

// HistoryQuery selects a page of a room's history.
type HistoryQuery struct {
	// After is the exclusive lower bound of the page; it counts only when
	// HasAfter is set. With it, the page holds the first Limit events after
	// After, in seq order; a seq older than the retained history is
	// ErrHistoryCompacted.
	After    uint64
	HasAfter bool
	// Before, when not 0, is the exclusive upper bound of the page. Without
	// HasAfter the page holds the latest Limit events before Before (or the
	// latest of all when Before is 0), still in seq order; such a page stops
	// at the retained history without error (see Room.FirstRetainedSeq).
	Before uint64
	// Limit is the most events returned: 0 means DefaultHistoryLimit; more
	// than MaxHistoryLimit or negative is errs.Invalid.
	Limit int
}

// History returns a page of room's events as user may see them (whispers to
// others are hidden, see Event.ViewFor). It checks user's right to read with
// CheckRead.
func History(r state.Reader, room, user string, q HistoryQuery) ([]Event, error) {
	limit, err := historyLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	rec, err := checkRead(r, room, user)
	if err != nil {
		return nil, err
	}
	hi := rec.lastSeq + 1
	if q.Before != 0 && q.Before < hi {
		hi = q.Before
	}
	var lo uint64
	if q.HasAfter {
		if q.After >= rec.lastSeq {
			return []Event{}, nil // nothing newer; also keeps After+1 from overflowing
		}
		if q.After+1 < rec.firstRetained {
			return nil, historyCompacted(room, rec.firstRetained)
		}
		lo = q.After + 1
	} else {
		lo = rec.firstRetained
		if hi > uint64(limit) && hi-uint64(limit) > lo {
			lo = hi - uint64(limit)
		}
	}
	events, err := scanEvents(r, room, lo, hi, limit)
	if err != nil {
		return nil, err
	}
	for i := range events {
		events[i] = events[i].ViewFor(user)
	}
	return events, nil
}

// EventsAfter returns up to limit (at least 1) events of room with seq >
// after, in seq order, as stored: whispers are not hidden, so the caller
// must apply Event.ViewFor for each subscriber. It returns
// ErrHistoryCompacted when events after after were already removed, and
// errs.NotFound when the room does not exist.
//
// It is how the stream layer tails rooms: after each applied index of a
// partition it reads, for every room with subscribers, the events after the
// last seq it delivered. Seqs are assigned at apply time, so a subscriber
// that resumes after seq s on any replica gets s+1, s+2... with no gap and no
// repeat.
func EventsAfter(r state.Reader, room string, after uint64, limit int) ([]Event, error) {
	rec, err := liveRoom(r, room)
	if err != nil {
		return nil, err
	}
	if after >= rec.lastSeq {
		return []Event{}, nil
	}
	if after+1 < rec.firstRetained {
		return nil, historyCompacted(room, rec.firstRetained)
	}
	return scanEvents(r, room, after+1, rec.lastSeq+1, max(limit, 1))
}

// historyLimit validates a History limit.
func historyLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultHistoryLimit, nil
	case limit < 0 || limit > MaxHistoryLimit:
		return 0, errs.New(errs.Invalid, "limit must be between 1 and %d", MaxHistoryLimit)
	}
	return limit, nil
}

// scanEvents returns up to limit stored events of room with lo <= seq < hi.
func scanEvents(r state.Reader, room string, lo, hi uint64, limit int) ([]Event, error) {
	if lo >= hi {
		return []Event{}, nil
	}
	events := make([]Event, 0, min(uint64(limit), hi-lo, 1024))
	var err error
	scanErr := r.Scan(eventKey(room, lo), eventKey(room, hi), func(k, v []byte) bool {
		var e Event
		if e, err = decodeEvent(room, k, v); err != nil {
			return false
		}
		events = append(events, e)
		return len(events) < limit
	})
	if scanErr != nil {
		return nil, fmt.Errorf("chat: scan events of %q: %w", room, scanErr)
	}
	if err != nil {
		return nil, err
	}
	return events, hydrate(r, room, events)
}

// hydrate sets the Message of every change among events, its target as it
// is in r, and of every reply, its thread's first message (unless that is
// a whisper, which the reply's readers may not see), each read once.
func hydrate(r state.Reader, room string, events []Event) error {
	var cache map[uint64]*Event
	for i := range events {
		e := &events[i]
		target := e.Target
		if e.ReplyTo != 0 && e.Kind != KindHidden {
			target = e.ReplyTo
		}
		if target == 0 || e.Kind == KindMention {
			continue
		}
		if cache == nil {
			cache = map[uint64]*Event{}
		}
		msg, ok := cache[target]
		if !ok {
			rec, err := getEvent(r, room, target)
			if err != nil {
				return err
			}
			if rec != nil {
				v := rec.view(room, target)
				msg = &v
			}
			cache[target] = msg
		}
		if msg != nil && (e.Target != 0 || msg.Kind != KindWhisper) {
			e.Message = msg
		}
	}
	return nil
}

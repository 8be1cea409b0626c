package chat

import (
	"time"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// The reads a search index needs (internal/search): which rooms a partition
// holds and how far their history goes, who may read which, and the
// messages a query found, as a reader may see them. They follow the rules
// of the other reads (CheckRead, Event.ViewFor), so search shows nothing
// history would not.

// LiveRooms returns every room of the partition that exists (not deleted;
// mention inboxes are not rooms), in name order, with its LastSeq and
// FirstRetainedSeq: an indexer reads each room's events up to LastSeq and
// forgets those below FirstRetainedSeq.
func LiveRooms(r state.Reader) ([]Room, error) {
	var out []Room
	err := forEachRoom(r, func(room string, rec *roomRecord) (bool, error) {
		if !rec.deleted && !isInbox(room) {
			out = append(out, rec.view(room))
		}
		return true, nil
	})
	return out, err
}

// ReadableRooms splits the live rooms of the partition into those user may
// read (CheckRead's rule, by the reader's clock: public rooms and the
// private rooms user is a member of, never one user is banned from) and
// the others, each in name order.
func ReadableRooms(r state.Reader, user string) (readable, others []string, err error) {
	now := time.Now().UnixMilli()
	err = forEachRoom(r, func(room string, rec *roomRecord) (bool, error) {
		if rec.deleted || isInbox(room) {
			return true, nil
		}
		ok, err := mayRead(r, room, rec, user, now)
		if err != nil {
			return false, err
		}
		if ok {
			readable = append(readable, room)
		} else {
			others = append(others, room)
		}
		return true, nil
	})
	return readable, others, err
}

// mayRead is checkReadAt's rule for a room whose record is read.
func mayRead(r state.Reader, room string, rec *roomRecord, user string, now int64) (bool, error) {
	if _, banned, err := activeSanction(r, room, banPrefix, user, now); err != nil || banned {
		return false, err
	}
	if !rec.private {
		return true, nil
	}
	_, member, err := getMember(r, room, user)
	return member, err
}

// SearchHit returns room's message seq as user may see it, and false when
// user may not see it at all: the room is gone or unreadable to user
// (CheckRead), the seq is not a message (any more: deleted, removed by
// retention), or it is a whisper user neither sent nor receives. A search
// shows a hit only when SearchHit returns it, so an index that lags the
// state never shows more than history would.
func SearchHit(r state.Reader, room, user string, seq uint64) (Event, bool, error) {
	rec, err := getRoom(r, room)
	if err != nil || rec == nil || rec.deleted || seq < rec.firstRetained || seq > rec.lastSeq {
		return Event{}, false, err
	}
	if ok, err := mayRead(r, room, rec, user, time.Now().UnixMilli()); err != nil || !ok {
		return Event{}, false, err
	}
	evs, err := eventsAt(r, room, rec, user, []uint64{seq})
	if err != nil || len(evs) == 0 {
		return Event{}, false, err
	}
	ev := evs[0]
	if (ev.Kind != KindMessage && ev.Kind != KindWhisper) || ev.Deleted {
		return Event{}, false, nil
	}
	return ev, true, nil
}

// Audience returns who may see a message: nil for a message to the room,
// and for a whisper its sender and recipients, folded (ident.Fold).
func (e Event) Audience() []string {
	if !e.private() {
		return nil
	}
	out := make([]string, 0, len(e.To)+1)
	out = append(out, ident.Fold(e.Sender))
	for _, t := range e.To {
		out = append(out, ident.Fold(t))
	}
	return out
}

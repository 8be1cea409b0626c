package chat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/wire"
)

// Result status bytes, the first byte of every result Apply returns. A
// refusal is its status followed by a message safe to show to users; an OK
// result is followed by its payload (see encodeOK).
const (
	statusOK        byte = 0
	statusInvalid   byte = 1
	statusNotFound  byte = 2
	statusForbidden byte = 3
	statusConflict  byte = 4
	// statusRateLimited refuses a post in slow mode (ModerationProtocol).
	statusRateLimited byte = 5
)

// slowModeRefusal is the message of a post refused by slow mode: the room,
// its slow mode and the whole seconds left to wait. Apply writes it (its
// bytes are part of the replicated result, so it never changes) and
// DecodeResult reads the wait back for the answer's Retry-After.
const slowModeRefusal = "room %q is in slow mode: one post every %d s; wait %d s"

// SlowModeWait is the cause of a post refused by slow mode: how long the
// poster must still wait.
type SlowModeWait time.Duration

// Error implements error.
func (w SlowModeWait) Error() string {
	return fmt.Sprintf("slow mode: wait %v", time.Duration(w))
}

// RetryAfter is how long to wait before posting again.
func (w SlowModeWait) RetryAfter() time.Duration { return time.Duration(w) }

// slowModeWait reads the wait back from a slow mode refusal's message.
func slowModeWait(msg []byte) (SlowModeWait, bool) {
	var room string
	var every, wait uint64
	if n, err := fmt.Sscanf(string(msg), slowModeRefusal, &room, &every, &wait); err != nil || n != 3 {
		return 0, false
	}
	return SlowModeWait(time.Duration(wait) * time.Second), true
}

var refusalCodes = map[byte]errs.Code{
	statusInvalid:     errs.Invalid,
	statusNotFound:    errs.NotFound,
	statusForbidden:   errs.Forbidden,
	statusConflict:    errs.Conflict,
	statusRateLimited: errs.RateLimited,
}

// OK payload flags.
const (
	resRoom  byte = 1 << 0 // a room name and record follow
	resMore  byte = 1 << 1 // Compact: the budget ran out before the work did
	resNames byte = 1 << 2 // a list of usernames follows n
)

// Result is what applying a chat command produced.
type Result struct {
	// Seq and Ts are the seq and time of the event the command appended
	// (Create and Join: the join; Leave: the leave; Post: the message), 0
	// when it appended none, as when joining twice.
	Seq uint64
	Ts  int64
	// User is the acting user as the room spells them: Post's sender.
	User string
	// N is MarkRead's new read marker, or the number of events Compact
	// deleted.
	N uint64
	// More is set by Compact when its budget ran out with work left.
	More bool
	// Notified lists the members a Post mentioned (by name, @here or
	// @room), as the room spells them: the owners of the mention inboxes
	// to notify.
	Notified []string
	// Room is the room after the command, for Create, Join, Leave and
	// Settings.
	Room *Room

	// op is the operation byte of the command that produced the result, so
	// the Service can tell when an idempotency key reused for another kind of
	// request brought back that request's result.
	op byte
}

// errBadResult is the cause of DecodeResult errors on malformed results.
var errBadResult = errors.New("chat: malformed result")

// encodeOK returns an OK result: status, the command's operation byte, flags,
// uvarint seq, varint ts, user, uvarint n, when flagged a list of names
// (uvarint count, each name), and when flagged the room's name and record
// (the rest).
func encodeOK(r okResult) []byte {
	var flags byte
	if r.rec != nil {
		flags |= resRoom
	}
	if r.more {
		flags |= resMore
	}
	if len(r.names) > 0 {
		flags |= resNames
	}
	b := make([]byte, 0, 64)
	b = append(b, statusOK, r.op, flags)
	b = binary.AppendUvarint(b, r.seq)
	b = binary.AppendVarint(b, r.ts)
	b = wire.AppendString(b, r.user)
	b = binary.AppendUvarint(b, r.n)
	if len(r.names) > 0 {
		b = appendNames(b, r.names)
	}
	if r.rec != nil {
		b = wire.AppendString(b, r.room)
		b = append(b, encodeRoom(r.rec)...)
	}
	return b
}

// okResult is the payload of an OK result, as Apply builds it.
type okResult struct {
	op    byte // the command's operation byte
	seq   uint64
	ts    int64
	user  string
	n     uint64
	more  bool
	room  string
	rec   *roomRecord
	names []string
}

// refuse returns a refusal result with the given status and message.
func refuse(status byte, format string, args ...any) []byte {
	return append([]byte{status}, fmt.Sprintf(format, args...)...)
}

// DecodeResult decodes the result of applying a chat command. Refusals come
// back as *errs.Error with code Invalid, NotFound, Forbidden or Conflict and
// the state machine's message; a malformed result is an internal error.
func DecodeResult(res []byte) (Result, error) {
	if len(res) == 0 {
		return Result{}, fmt.Errorf("%w: empty", errBadResult)
	}
	if res[0] != statusOK {
		code, ok := refusalCodes[res[0]]
		if !ok {
			return Result{}, fmt.Errorf("%w: unknown status %d", errBadResult, res[0])
		}
		if res[0] == statusRateLimited {
			if wait, ok := slowModeWait(res[1:]); ok {
				return Result{}, errs.Wrap(code, wait, "%s", res[1:])
			}
		}
		return Result{}, errs.New(code, "%s", res[1:])
	}
	d := decoder{b: res[1:]}
	op := d.byte1()
	flags := d.flags(resRoom | resMore | resNames)
	r := Result{op: op, Seq: d.uvarint(), Ts: d.varint(), User: d.str(), N: d.uvarint(), More: flags&resMore != 0}
	if flags&resNames != 0 {
		r.Notified = d.names()
	}
	if flags&resRoom != 0 {
		name := d.name()
		if d.err == nil {
			rec, err := decodeRoom([]byte(name), d.b)
			if err != nil {
				return Result{}, fmt.Errorf("%w: %w", errBadResult, err)
			}
			room := rec.view(name)
			r.Room = &room
			d.b = nil
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return Result{}, fmt.Errorf("%w: %w", errBadResult, d.err)
	}
	return r, nil
}

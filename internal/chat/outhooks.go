package chat

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// Outgoing webhooks (DESIGN.md "Outgoing webhooks"): a room's hook that
// POSTs the room's messages, or those starting with one of its trigger
// words, to a URL. The hook is a record of the room; a post that matches
// it writes an outbox entry in the same batch as the message, and the
// partition's leader delivers the entries (internal/webhook) and records
// each attempt with a Delivered command.

// Operation bytes of the outgoing hook commands, new at HookProtocol.
const (
	opCreateOutHook byte = 'O'
	opDeleteOutHook byte = 'o'
	opDelivered     byte = 'D'
)

// Limits of outgoing hooks.
const (
	// MaxOutHooksPerRoom is the most outgoing hooks one room may have.
	MaxOutHooksPerRoom = 16
	// MaxHookURL is the longest hook URL in bytes.
	MaxHookURL = 2048
	// MaxTriggerWords is the most trigger words of one hook.
	MaxTriggerWords = 16
	// MaxTriggerWord is the longest trigger word in bytes.
	MaxTriggerWord = 64
	// DeliveryLogSize is how many delivery attempts a hook's log keeps.
	DeliveryLogSize = 50
	// MaxDeliveryAttempts is how many times a message is tried before
	// its delivery is given up.
	MaxDeliveryAttempts = 10
	// MaxDeliveryError is the longest error text a log entry keeps.
	MaxDeliveryError = 200
)

// Keys of outgoing hooks, beside those of record.go and hooks.go:
//
//	c/<room>/o/<id>                    outgoing hook record
//	c/<room>/d/<id><n>                 delivery log entry n of hook id
//	c/!out/<due><room>/<seq><id>       outbox: message seq of room to
//	                                   deliver to hook id from time due
//
// <n>, <seq> and <due> are 8 bytes big endian (due in Unix ms). The outbox
// is partition-wide, ordered by due time, so the leader finds what is due
// with one short scan; "!out" is no room name ('!' is not allowed), so
// every room listing skips it (it has no room record).
const (
	outHookPrefix   byte = 'o'
	deliveryPrefix  byte = 'd'
	outboxRoom           = "!out"
	deliveryIDSep        = "-"
	outHookIDLength      = hookIDLen
)

// Delivery outcomes, as the delivery log records them.
const (
	// OutcomeRetry: the attempt failed and another is scheduled.
	OutcomeRetry = "retry"
	// OutcomeDelivered: the receiver answered 2xx.
	OutcomeDelivered = "delivered"
	// OutcomeGaveUp: the last attempt failed; no other will be made.
	OutcomeGaveUp = "gave_up"
	// OutcomeDropped: the message was deleted before it could be
	// delivered.
	OutcomeDropped = "dropped"
)

// outcomeCodes are the stored forms of the outcomes.
var outcomeCodes = []string{OutcomeRetry, OutcomeDelivered, OutcomeGaveUp, OutcomeDropped}

// DeliveryBackoffMs is how long after a failed attempt (attempts made so
// far) the next is tried: 500 ms doubled each time, at most 10 minutes.
func DeliveryBackoffMs(attempts uint64) int64 {
	const base, most = 500, 10 * 60 * 1000
	if attempts == 0 {
		return 0
	}
	if attempts > 20 {
		return most
	}
	return min(int64(base)<<(attempts-1), most)
}

// MatchesTriggers reports whether a message with text fires a hook with
// these trigger words: every message when there are none, else a message
// whose first word is one of them, compared without regard to ASCII case
// (the same on every replica, whatever Unicode tables a build has).
func MatchesTriggers(text string, triggers []string) bool {
	if len(triggers) == 0 {
		return true
	}
	first := strings.TrimLeft(text, " \t\n")
	if i := strings.IndexAny(first, " \t\n"); i >= 0 {
		first = first[:i]
	}
	for _, t := range triggers {
		if ident.EqualFold(first, t) {
			return true
		}
	}
	return false
}

// DeliveryID returns the id of the delivery of message seq to hook id: the
// same for every attempt, so receivers can drop a repeated one.
func DeliveryID(hook string, seq uint64) string {
	return fmt.Sprintf("%s%s%d", hook, deliveryIDSep, seq)
}

// CreateOutHook adds outgoing hook ID to Room on behalf of User, its owner
// or, with Admin, an administrator. Secret signs its deliveries.
//
// Encoding: Tag, 'O', flags (admin), Room, User, ID, Name, URL, Secret,
// uvarint count of Triggers, each.
type CreateOutHook struct {
	Room, User string
	Admin      bool
	ID, Name   string
	URL        string
	Secret     string
	Triggers   []string
}

// DeleteOutHook deletes outgoing hook ID of Room with its delivery log, on
// behalf of User, its owner or, with Admin, an administrator.
//
// Encoding: Tag, 'o', flags (admin), Room, User, ID.
type DeleteOutHook struct {
	Room, User string
	Admin      bool
	ID         string
}

// Delivered records an attempt to deliver message Seq of Room to hook ID,
// taken from the outbox entry due at Due: Attempt is its number (1 for the
// first), Status the receiver's HTTP status (0 when none came), Error what
// went wrong. OK settles the entry; Drop settles it undelivered (the
// message or hook is gone); otherwise the entry is due again after
// DeliveryBackoffMs, until MaxDeliveryAttempts.
//
// Encoding: Tag, 'D', flags (ok, drop), Room, ID, uvarint Seq, uvarint
// Due, uvarint Attempt, uvarint Status, Error.
type Delivered struct {
	Room, ID string
	Seq      uint64
	Due      int64
	Attempt  uint64
	Status   uint64
	Error    string
	OK, Drop bool
}

// Flag bits of Delivered.
const (
	flagDeliveredOK   byte = 1 << 0
	flagDeliveredDrop byte = 1 << 1
)

func (CreateOutHook) isCommand() {}
func (DeleteOutHook) isCommand() {}
func (Delivered) isCommand()     {}

// EncodeCreateOutHook returns the binary encoding of c.
func EncodeCreateOutHook(c CreateOutHook) []byte {
	b := hookHead(opCreateOutHook, c.Admin, c.Room, c.User, c.ID)
	b = wire.AppendString(wire.AppendString(b, c.Name), c.URL)
	b = wire.AppendString(b, c.Secret)
	b = binary.AppendUvarint(b, uint64(len(c.Triggers)))
	for _, t := range c.Triggers {
		b = wire.AppendString(b, t)
	}
	return b
}

// EncodeDeleteOutHook returns the binary encoding of c.
func EncodeDeleteOutHook(c DeleteOutHook) []byte {
	return hookHead(opDeleteOutHook, c.Admin, c.Room, c.User, c.ID)
}

// EncodeDelivered returns the binary encoding of c.
func EncodeDelivered(c Delivered) []byte {
	var flags byte
	if c.OK {
		flags |= flagDeliveredOK
	}
	if c.Drop {
		flags |= flagDeliveredDrop
	}
	b := make([]byte, 0, 3+6*binary.MaxVarintLen64+len(c.Room)+len(c.ID)+len(c.Error))
	b = append(b, Tag, opDelivered, flags)
	b = wire.AppendString(wire.AppendString(b, c.Room), c.ID)
	b = binary.AppendUvarint(b, c.Seq)
	b = binary.AppendUvarint(b, uint64(c.Due))
	b = binary.AppendUvarint(b, c.Attempt)
	b = binary.AppendUvarint(b, c.Status)
	return wire.AppendString(b, c.Error)
}

// decodeOutHookCommand decodes the commands of this file; ok is false for
// another operation.
func decodeOutHookCommand(op byte, d *decoder) (c Command, ok bool) {
	switch op {
	case opCreateOutHook:
		h := CreateOutHook{Admin: d.flags(flagAdmin) != 0, Room: d.name(), User: d.name(), ID: d.name(), Name: d.name(), URL: d.name(), Secret: d.name()}
		n := d.uvarint()
		if d.err == nil && n > MaxTriggerWords {
			d.fail("%d trigger words", n)
		}
		for i := uint64(0); d.err == nil && i < n; i++ {
			h.Triggers = append(h.Triggers, d.name())
		}
		return h, true
	case opDeleteOutHook:
		return DeleteOutHook{Admin: d.flags(flagAdmin) != 0, Room: d.name(), User: d.name(), ID: d.name()}, true
	case opDelivered:
		flags := d.flags(flagDeliveredOK | flagDeliveredDrop)
		c := Delivered{OK: flags&flagDeliveredOK != 0, Drop: flags&flagDeliveredDrop != 0, Room: d.name(), ID: d.name()}
		c.Seq, c.Due, c.Attempt, c.Status, c.Error = d.uvarint(), int64(d.uvarint()), d.uvarint(), d.uvarint(), d.str()
		return c, true
	}
	return nil, false
}

// outHookRecord is an outgoing hook's stored state.
type outHookRecord struct {
	id, name, url, secret string
	triggers              []string
	creator               string
	createdAt             int64
	// logNext numbers the next delivery log entry.
	logNext uint64
}

// outHookKey returns the key of room's outgoing hook id.
func outHookKey(room, id string) []byte {
	return append(sanctionPrefix(room, outHookPrefix), id...)
}

// deliveryKey returns the key of entry n of the delivery log of room's hook id.
func deliveryKey(room, id string, n uint64) []byte {
	return binary.BigEndian.AppendUint64(append(sanctionPrefix(room, deliveryPrefix), id...), n)
}

// outboxPrefix is the prefix of the partition's outbox.
func outboxPrefix() []byte { return roomPrefix(outboxRoom) }

// outboxKey returns the key of the outbox entry of message seq of room for
// hook id, due at due.
func outboxKey(due int64, room string, seq uint64, id string) []byte {
	b := outboxPrefix()
	b = binary.BigEndian.AppendUint64(b, uint64(max(due, 0)))
	b = append(append(b, room...), '/')
	b = binary.BigEndian.AppendUint64(b, seq)
	return append(b, id...)
}

// parseOutboxKey splits an outbox key.
func parseOutboxKey(k []byte) (due int64, room string, seq uint64, id string, ok bool) {
	rest := k[len(outboxPrefix()):]
	if len(rest) < 8+1+1+8+outHookIDLength {
		return 0, "", 0, "", false
	}
	due, rest = int64(binary.BigEndian.Uint64(rest)), rest[8:]
	tail := rest[len(rest)-8-outHookIDLength:]
	name := rest[:len(rest)-len(tail)]
	if name[len(name)-1] != '/' {
		return 0, "", 0, "", false
	}
	return due, string(name[:len(name)-1]), binary.BigEndian.Uint64(tail), string(tail[8:]), true
}

// encodeOutHook returns the stored form of h: version, varint createdAt,
// uvarint logNext, name, url, secret, creator, uvarint count of
// triggers, each (the id is the key's).
func encodeOutHook(h *outHookRecord) []byte {
	b := make([]byte, 0, 64+len(h.name)+len(h.url)+len(h.secret)+len(h.creator))
	b = append(b, recordVersion)
	b = binary.AppendVarint(b, h.createdAt)
	b = binary.AppendUvarint(b, h.logNext)
	b = wire.AppendString(wire.AppendString(b, h.name), h.url)
	b = wire.AppendString(wire.AppendString(b, h.secret), h.creator)
	b = binary.AppendUvarint(b, uint64(len(h.triggers)))
	for _, t := range h.triggers {
		b = wire.AppendString(b, t)
	}
	return b
}

// decodeOutHook decodes the outgoing hook record stored under k.
func decodeOutHook(k []byte, id string, v []byte) (*outHookRecord, error) {
	d := decoder{b: v}
	if d.byte1() != recordVersion && d.err == nil {
		d.fail("unknown record version")
	}
	h := &outHookRecord{id: id, createdAt: d.varint(), logNext: d.uvarint(), name: d.name(), url: d.name(), secret: d.name(), creator: d.name()}
	n := d.uvarint()
	for i := uint64(0); d.err == nil && i < n; i++ {
		h.triggers = append(h.triggers, d.name())
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("chat: corrupt outgoing hook record under %q: %w", k, d.err)
	}
	return h, nil
}

// getOutHook reads room's outgoing hook id; nil when there is none.
func getOutHook(r state.Reader, room, id string) (*outHookRecord, error) {
	k := outHookKey(room, id)
	v, found, err := r.Get(k)
	if err != nil {
		return nil, fmt.Errorf("chat: read %q: %w", k, err)
	}
	if !found {
		return nil, nil
	}
	return decodeOutHook(k, id, v)
}

// listOutHooks returns room's outgoing hooks in id order.
func listOutHooks(r state.Reader, room string) ([]*outHookRecord, error) {
	lo := sanctionPrefix(room, outHookPrefix)
	var out []*outHookRecord
	var err error
	scanErr := r.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		var h *outHookRecord
		if h, err = decodeOutHook(k, string(k[len(lo):]), v); err != nil {
			return false
		}
		out = append(out, h)
		return true
	})
	if scanErr != nil {
		return nil, fmt.Errorf("chat: scan outgoing hooks of %q: %w", room, scanErr)
	}
	return out, err
}

// deliveryRecord is one entry of a delivery log.
type deliveryRecord struct {
	seq, attempt, status uint64
	ts                   int64
	outcome              byte // index in outcomeCodes
	err                  string
}

// encodeDelivery returns the stored form of e: version, uvarint seq,
// attempt, status, varint ts, outcome byte, error.
func encodeDelivery(e deliveryRecord) []byte {
	b := make([]byte, 0, 2+4*binary.MaxVarintLen64+1+len(e.err))
	b = append(b, recordVersion)
	b = binary.AppendUvarint(b, e.seq)
	b = binary.AppendUvarint(b, e.attempt)
	b = binary.AppendUvarint(b, e.status)
	b = binary.AppendVarint(b, e.ts)
	b = append(b, e.outcome)
	return wire.AppendString(b, e.err)
}

// decodeDelivery decodes a delivery log entry stored under k.
func decodeDelivery(k, v []byte) (deliveryRecord, error) {
	d := decoder{b: v}
	if d.byte1() != recordVersion && d.err == nil {
		d.fail("unknown record version")
	}
	e := deliveryRecord{seq: d.uvarint(), attempt: d.uvarint(), status: d.uvarint(), ts: d.varint(), outcome: d.byte1(), err: d.str()}
	if d.err == nil && (int(e.outcome) >= len(outcomeCodes) || len(d.b) != 0) {
		d.fail("bad outcome or trailing bytes")
	}
	if d.err != nil {
		return e, fmt.Errorf("chat: corrupt delivery log entry under %q: %w", k, d.err)
	}
	return e, nil
}

package queue

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/wire"
)

// Tag is the first byte of every queue command. The partition state machine
// dispatches on it to hand the command to StateMachine.
const Tag byte = 'Q'

// Operation bytes, the second byte of every command.
const (
	opCreate  byte = 'C'
	opDelete  byte = 'D'
	opSend    byte = 'S'
	opReceive byte = 'R'
	opAck     byte = 'A'
)

// Flag bits, the third byte of every command. Unknown bits are rejected, so a
// later field can be added under a new bit without old decoders misreading it.
const (
	flagAdmin byte = 1 << iota // Delete only: the caller is an administrator
)

// Structural bounds every decoded command keeps. The Service enforces the
// (smaller, configurable) product limits; these only keep the state's key
// layout and arithmetic safe.
const (
	// MaxNameLen is the longest queue or user name a command may carry.
	MaxNameLen = 255
	// MaxAckTimeoutMs is the longest lease a command may ask for, about 35
	// years: far below any overflow of a leader-stamped time plus the lease.
	MaxAckTimeoutMs = 1 << 40
)

// Command is a decoded queue command: Create, Delete, Send, Receive or Ack.
// Every command names its queue first and the acting user second.
type Command interface {
	isCommand()
}

// Create makes an empty queue owned by User.
//
// Encoding: Tag, 'C', 0, str Queue, str User, where str is a uvarint length
// and that many bytes.
type Create struct {
	Queue string
	User  string
}

// Delete removes a queue and every message in it. Only the queue's creator
// may, unless Admin is set: the Service sets it when the caller is an
// administrator.
//
// Encoding: Tag, 'D', flags (flagAdmin), str Queue, str User.
type Delete struct {
	Queue string
	User  string
	Admin bool
}

// Send appends a message from User to the queue, for To ("" for anyone).
//
// Encoding: Tag, 'S', 0, str Queue, str User, str To, Body (the rest, not
// empty).
type Send struct {
	Queue string
	User  string
	To    string
	// Body is the message. After DecodeCommand it aliases the command bytes.
	Body []byte
}

// Receive takes the oldest message User may receive, only from From when it
// is not empty. AckTimeoutMs > 0 leases the message for that long instead of
// removing it.
//
// Encoding: Tag, 'R', 0, str Queue, str User, str From, uvarint AckTimeoutMs.
type Receive struct {
	Queue        string
	User         string
	From         string
	AckTimeoutMs int64
}

// Ack removes a message User holds a lease on: the message ID and the Raft
// index of the receive that leased it (Lease), both taken from the receipt.
//
// Encoding: Tag, 'A', 0, str Queue, str User, uvarint ID, uvarint Lease.
type Ack struct {
	Queue string
	User  string
	ID    uint64
	Lease uint64
}

func (Create) isCommand()  {}
func (Delete) isCommand()  {}
func (Send) isCommand()    {}
func (Receive) isCommand() {}
func (Ack) isCommand()     {}

// errMalformed is the cause of every DecodeCommand error.
var errMalformed = errors.New("queue: malformed command")

// EncodeCreate returns the binary encoding of c.
func EncodeCreate(c Create) []byte {
	return appendHeader(make([]byte, 0, headerCap(c.Queue, c.User)), opCreate, 0, c.Queue, c.User)
}

// EncodeDelete returns the binary encoding of d.
func EncodeDelete(d Delete) []byte {
	var flags byte
	if d.Admin {
		flags |= flagAdmin
	}
	return appendHeader(make([]byte, 0, headerCap(d.Queue, d.User)), opDelete, flags, d.Queue, d.User)
}

// EncodeSend returns the binary encoding of s.
func EncodeSend(s Send) []byte {
	b := make([]byte, 0, headerCap(s.Queue, s.User)+binary.MaxVarintLen64+len(s.To)+len(s.Body))
	b = appendHeader(b, opSend, 0, s.Queue, s.User)
	b = wire.AppendString(b, s.To)
	return append(b, s.Body...)
}

// EncodeReceive returns the binary encoding of r.
func EncodeReceive(r Receive) []byte {
	b := make([]byte, 0, headerCap(r.Queue, r.User)+2*binary.MaxVarintLen64+len(r.From))
	b = appendHeader(b, opReceive, 0, r.Queue, r.User)
	b = wire.AppendString(b, r.From)
	return binary.AppendUvarint(b, uint64(r.AckTimeoutMs))
}

// EncodeAck returns the binary encoding of a.
func EncodeAck(a Ack) []byte {
	b := make([]byte, 0, headerCap(a.Queue, a.User)+2*binary.MaxVarintLen64)
	b = appendHeader(b, opAck, 0, a.Queue, a.User)
	b = binary.AppendUvarint(b, a.ID)
	return binary.AppendUvarint(b, a.Lease)
}

func headerCap(queue, user string) int {
	return 3 + 2*binary.MaxVarintLen64 + len(queue) + len(user)
}

func appendHeader(b []byte, op, flags byte, queue, user string) []byte {
	b = append(b, Tag, op, flags)
	return wire.AppendString(wire.AppendString(b, queue), user)
}

// DecodeCommand decodes a command made by one of the Encode functions. It
// accepts only canonical encodings (minimal varints, no unknown flags, no
// trailing bytes) of well-formed commands: a queue name and, when present,
// user names of at most MaxNameLen bytes of [A-Za-z0-9_.-], a non-empty Send
// body, an AckTimeoutMs of at most MaxAckTimeoutMs, non-zero Ack ids. So every
// command it accepts re-encodes to the same bytes. It never panics.
func DecodeCommand(cmd []byte) (Command, error) {
	op, flags, queue, user, rest, err := decodeHeader(cmd)
	if err != nil {
		return nil, err
	}
	if op != opDelete && flags != 0 || flags&^flagAdmin != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x", errMalformed, flags)
	}
	switch op {
	case opCreate:
		return Create{Queue: queue, User: user}, noTrailing(rest)
	case opDelete:
		return Delete{Queue: queue, User: user, Admin: flags&flagAdmin != 0}, noTrailing(rest)
	case opSend:
		to, rest, err := readName(rest, "receiver", true)
		if err != nil {
			return nil, err
		}
		if len(rest) == 0 {
			return nil, fmt.Errorf("%w: empty body", errMalformed)
		}
		return Send{Queue: queue, User: user, To: to, Body: rest}, nil
	case opReceive:
		from, rest, err := readName(rest, "sender", true)
		if err != nil {
			return nil, err
		}
		timeout, rest, err := readUvarint(rest)
		if err != nil {
			return nil, err
		}
		if timeout > MaxAckTimeoutMs {
			return nil, fmt.Errorf("%w: ack timeout %d ms", errMalformed, timeout)
		}
		return Receive{Queue: queue, User: user, From: from, AckTimeoutMs: int64(timeout)}, noTrailing(rest)
	case opAck:
		id, rest, err := readUvarint(rest)
		if err != nil {
			return nil, err
		}
		lease, rest, err := readUvarint(rest)
		if err != nil {
			return nil, err
		}
		if id == 0 || lease == 0 {
			return nil, fmt.Errorf("%w: zero message id or lease", errMalformed)
		}
		return Ack{Queue: queue, User: user, ID: id, Lease: lease}, noTrailing(rest)
	default:
		return nil, fmt.Errorf("%w: unknown op %#x", errMalformed, op)
	}
}

// decodeHeader reads the part every command shares: tag, op, flags, queue
// and acting user.
func decodeHeader(cmd []byte) (op, flags byte, queue, user string, rest []byte, err error) {
	if len(cmd) < 3 || cmd[0] != Tag {
		return 0, 0, "", "", nil, fmt.Errorf("%w: missing tag or header", errMalformed)
	}
	op, flags = cmd[1], cmd[2]
	if queue, rest, err = readName(cmd[3:], "queue", false); err != nil {
		return 0, 0, "", "", nil, err
	}
	if user, rest, err = readName(rest, "user", true); err != nil {
		return 0, 0, "", "", nil, err
	}
	return op, flags, queue, user, rest, nil
}

// TouchedKey returns the queue of a command that, once applied, may make a
// message available to a waiting receiver or end its wait (a Send or a
// Delete), and false for every other command, including malformed ones. The
// partition layer's apply notifier calls it on applied commands to implement
// Notifier. It reads the queue name only; it does not decode the command.
func TouchedKey(cmd []byte) (queue string, ok bool) {
	if len(cmd) < 3 || cmd[0] != Tag || (cmd[1] != opSend && cmd[1] != opDelete) {
		return "", false
	}
	q, _, err := readName(cmd[3:], "queue", false)
	if err != nil {
		return "", false
	}
	return q, true
}

// readName reads a uvarint length and that many bytes of name: at most
// MaxNameLen bytes of [A-Za-z0-9_.-], empty only when allowEmpty.
func readName(b []byte, what string, allowEmpty bool) (string, []byte, error) {
	n, rest, err := readUvarint(b)
	if err != nil {
		return "", nil, err
	}
	if n > uint64(len(rest)) || n > MaxNameLen || (n == 0 && !allowEmpty) {
		return "", nil, fmt.Errorf("%w: %s length %d with %d bytes left", errMalformed, what, n, len(rest))
	}
	name := string(rest[:n])
	if n > 0 && !ident.ValidName(name, MaxNameLen) {
		return "", nil, fmt.Errorf("%w: %s %q has characters outside [A-Za-z0-9_.-]", errMalformed, what, name)
	}
	return name, rest[n:], nil
}

func noTrailing(rest []byte) error {
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", errMalformed, len(rest))
	}
	return nil
}

// readUvarint reads a minimally encoded uvarint (wire.Uvarint).
func readUvarint(b []byte) (uint64, []byte, error) { return wire.Uvarint(b, errMalformed) }

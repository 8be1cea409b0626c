package queue

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

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
	opBatch   byte = 'B' // SendBatch
	opNack    byte = 'N'
	opExtend  byte = 'E'
	opConfig  byte = 'K' // Configure
	opPurge   byte = 'P'
	opRedrive byte = 'V'
	opImport  byte = 'I'
	opOutDone byte = 'O'
	opTick    byte = 'T'
)

// Flag bits, the third byte of every command. Unknown bits are rejected, so a
// later field can be added under a new bit without old decoders misreading it.
const (
	// flagAdmin: the caller is an administrator (Delete, Configure, Purge,
	// Redrive).
	flagAdmin byte = 1 << iota
	// flagMore: optional fields follow (Create: Settings; Send: SendOptions;
	// Receive: Max).
	flagMore
	// flagAck: a Receive acknowledges leases first (Receive.Acks). New at
	// AckOnReceiveProtocol: an older replica rejects the bit.
	flagAck
)

// AckOnReceiveProtocol is the internal protocol (compat.Protocol) that
// brought Receive.Acks. A replica of an earlier build refuses a Receive
// carrying them, so the Service proposes one only once every node speaks it.
const AckOnReceiveProtocol = 2

// adminOps are the ops that may carry flagAdmin; moreOps those that may
// carry flagMore.
var (
	adminOps = [256]bool{opDelete: true, opConfig: true, opPurge: true, opRedrive: true}
	moreOps  = [256]bool{opCreate: true, opSend: true, opReceive: true}
	ackOps   = [256]bool{opReceive: true}
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
	// MaxBatch is the most messages one SendBatch, Receive or Import carries.
	MaxBatch = 100
	// MaxPriority is the highest priority; 0 is the lowest and the default.
	MaxPriority = 9
	// MaxReasonLen is the longest nack reason, in bytes.
	MaxReasonLen = 256
	// MaxGroupLen is the longest FIFO group key, in bytes.
	MaxGroupLen = 128
	// MaxRedrive is the most dead letters one Redrive moves.
	MaxRedrive = 1000
)

// Command is a decoded queue command: Create, Delete, Send, SendBatch,
// Receive, Ack, Nack, Extend, Configure, Purge, Redrive, and the commands of
// the queue's own machinery (Import, OutDone, Tick). Every command names its
// queue first and the acting user second ("" for the machinery).
type Command interface {
	// queueName returns the queue the command names.
	queueName() string
}

// Create makes an empty queue owned by User, with the default settings
// changed by Settings.
//
// Encoding: Tag, 'C', flags (flagMore when Settings.Set is not 0), str
// Queue, str User, where str is a uvarint length and that many bytes; with
// flagMore the settings (appendSettings).
type Create struct {
	Queue    string
	User     string
	Settings SettingsUpdate
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
// Encoding: Tag, 'S', flags (flagMore when an option is set), str Queue,
// str User, str To, with flagMore the options (appendSendOptions), Body
// (the rest, not empty).
type Send struct {
	Queue string
	User  string
	To    string
	SendOptions
	// Body is the message. After DecodeCommand it aliases the command bytes.
	Body []byte
}

// SendOptions are a send's optional fields; the zero value is none.
type SendOptions struct {
	// Priority is 0 to MaxPriority; higher priorities are received first.
	Priority byte
	// DelayMs delays delivery until the send's leader-stamped time plus
	// DelayMs; DeliverAtMs until that Unix ms time. At most one is set.
	DelayMs, DeliverAtMs int64
	// TTLMs, when > 0, expires the message that long after its send.
	TTLMs int64
	// Group is the message's FIFO group: the messages of a group are
	// delivered in order, one at a time.
	Group string
}

// Receive takes the first message User may receive (highest priority, then
// oldest), only from From when it is not empty; up to Max of them when Max
// > 1. AckTimeoutMs > 0 leases the messages for that long instead of
// removing them. Acks, when not empty, are leases of User acknowledged
// first, all or none: when one is unknown or lapsed, nothing changes.
//
// Encoding: Tag, 'R', flags (flagMore when Max > 1, flagAck when Acks),
// str Queue, str User, str From, uvarint AckTimeoutMs, with flagMore
// uvarint Max, with flagAck uvarint count and per lease uvarint ID and
// Lease, in increasing ID order (so no message twice).
type Receive struct {
	Queue        string
	User         string
	From         string
	AckTimeoutMs int64
	Max          int
	Acks         []Held
}

// Held names a lease from its receipt: the message ID and the Raft index of
// the receive that leased it.
type Held struct {
	ID    uint64
	Lease uint64
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

func (c Create) queueName() string  { return c.Queue }
func (c Delete) queueName() string  { return c.Queue }
func (c Send) queueName() string    { return c.Queue }
func (c Receive) queueName() string { return c.Queue }
func (c Ack) queueName() string     { return c.Queue }

// errMalformed is the cause of every DecodeCommand error.
var errMalformed = errors.New("queue: malformed command")

// EncodeCreate returns the binary encoding of c.
func EncodeCreate(c Create) []byte {
	var flags byte
	if c.Settings.Set != 0 {
		flags = flagMore
	}
	b := appendHeader(make([]byte, 0, headerCap(c.Queue, c.User)), opCreate, flags, c.Queue, c.User)
	if flags != 0 {
		b = appendSettings(b, c.Settings)
	}
	return b
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
	var flags byte
	if s.SendOptions != (SendOptions{}) {
		flags = flagMore
	}
	b := make([]byte, 0, headerCap(s.Queue, s.User)+6*binary.MaxVarintLen64+len(s.To)+len(s.Group)+len(s.Body))
	b = appendHeader(b, opSend, flags, s.Queue, s.User)
	b = wire.AppendString(b, s.To)
	if flags != 0 {
		b = appendSendOptions(b, s.SendOptions)
	}
	return append(b, s.Body...)
}

// EncodeReceive returns the binary encoding of r. r.Acks must be sorted by
// ID with no ID twice (SortHeld); the decoder refuses them otherwise.
func EncodeReceive(r Receive) []byte {
	var flags byte
	if r.Max > 1 {
		flags = flagMore
	}
	if len(r.Acks) > 0 {
		flags |= flagAck
	}
	b := make([]byte, 0, headerCap(r.Queue, r.User)+(4+2*len(r.Acks))*binary.MaxVarintLen64+len(r.From))
	b = appendHeader(b, opReceive, flags, r.Queue, r.User)
	b = wire.AppendString(b, r.From)
	b = binary.AppendUvarint(b, uint64(r.AckTimeoutMs))
	if flags&flagMore != 0 {
		b = binary.AppendUvarint(b, uint64(r.Max))
	}
	if flags&flagAck != 0 {
		b = binary.AppendUvarint(b, uint64(len(r.Acks)))
		for _, h := range r.Acks {
			b = binary.AppendUvarint(binary.AppendUvarint(b, h.ID), h.Lease)
		}
	}
	return b
}

// SortHeld sorts leases by message ID, as EncodeReceive needs, and reports
// whether every ID is distinct.
func SortHeld(hs []Held) bool {
	slices.SortFunc(hs, func(a, b Held) int { return cmp.Compare(a.ID, b.ID) })
	for i := 1; i < len(hs); i++ {
		if hs[i].ID == hs[i-1].ID {
			return false
		}
	}
	return true
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
// user names of at most MaxNameLen bytes of [A-Za-z0-9_.-], non-empty
// bodies, an AckTimeoutMs of at most MaxAckTimeoutMs, non-zero ids, counts
// within their bounds. So every command it accepts re-encodes to the same
// bytes. It never panics.
func DecodeCommand(cmd []byte) (Command, error) {
	op, flags, queue, user, rest, err := decodeHeader(cmd)
	if err != nil {
		return nil, err
	}
	if flags&^(flagAdmin|flagMore|flagAck) != 0 || flags&flagAdmin != 0 && !adminOps[op] || flags&flagMore != 0 && !moreOps[op] ||
		flags&flagAck != 0 && !ackOps[op] {
		return nil, fmt.Errorf("%w: unknown flags %#x", errMalformed, flags)
	}
	d := decoder{queue: queue, user: user, admin: flags&flagAdmin != 0, more: flags&flagMore != 0, acks: flags&flagAck != 0, rest: rest}
	var c Command
	switch op {
	case opCreate:
		c = d.create()
	case opDelete:
		c = Delete{Queue: queue, User: user, Admin: d.admin}
	case opSend:
		c = d.send()
	case opReceive:
		c = d.receive()
	case opAck:
		c = d.ack()
	default:
		c = d.decodeMore(op)
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(d.rest))
	}
	return c, nil
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
// message available to a waiting receiver or end its wait (a Send, a
// SendBatch, an Ack or Nack, which may release the next message of a FIFO
// group or the nacked one, a Receive that acknowledges, an Import, a Tick or a Delete), and false for
// every other command, including malformed ones. The
// partition layer's apply notifier calls it on applied commands to implement
// Notifier. It reads the queue name only; it does not decode the command.
func TouchedKey(cmd []byte) (queue string, ok bool) {
	if len(cmd) < 3 || cmd[0] != Tag || !touchingOps[cmd[1]] && !(cmd[1] == opReceive && cmd[2]&flagAck != 0) {
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

// touchingOps are the ops TouchedKey reports.
var touchingOps = [256]bool{opSend: true, opDelete: true, opBatch: true, opAck: true, opNack: true, opImport: true, opTick: true}

// readUvarint reads a minimally encoded uvarint (wire.Uvarint).
func readUvarint(b []byte) (uint64, []byte, error) { return wire.Uvarint(b, errMalformed) }

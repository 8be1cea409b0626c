package queue

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/wire"
)

// SendBatch appends Messages from User to the queue, atomically: all of
// them or, when one is refused, none. The Queue and User of each message are
// ignored.
//
// Encoding: Tag, 'B', 0, str Queue, str User, uvarint n (1 to MaxBatch),
// then per message: str To, the options (appendSendOptions), bytes Body.
type SendBatch struct {
	Queue    string
	User     string
	Messages []Send
}

// Nack returns a message User holds a lease on: to the queue after DelayMs
// (at once when 0), or, with Dead, to the dead-letter queue. Reason is kept
// with the message and shown when it is dead-lettered.
//
// Encoding: Tag, 'N', 0, str Queue, str User, uvarint ID, uvarint Lease,
// uvarint DelayMs, byte Dead (0 or 1), bytes Reason.
type Nack struct {
	Queue   string
	User    string
	ID      uint64
	Lease   uint64
	DelayMs int64
	Dead    bool
	Reason  string
}

// Extend sets the lease User holds on a message to end AckTimeoutMs after
// the command's leader-stamped time.
//
// Encoding: Tag, 'E', 0, str Queue, str User, uvarint ID, uvarint Lease,
// uvarint AckTimeoutMs (1 to MaxAckTimeoutMs).
type Extend struct {
	Queue        string
	User         string
	ID           uint64
	Lease        uint64
	AckTimeoutMs int64
}

// Configure changes the settings of a queue named in Settings.Set. Only the
// queue's creator may, unless Admin.
//
// Encoding: Tag, 'K', flags (flagAdmin), str Queue, str User, settings.
type Configure struct {
	Queue    string
	User     string
	Admin    bool
	Settings SettingsUpdate
}

// Purge removes every message of a queue, leased ones included. Only the
// queue's creator may, unless Admin.
//
// Encoding: Tag, 'P', flags (flagAdmin), str Queue, str User.
type Purge struct {
	Queue string
	User  string
	Admin bool
}

// Redrive moves up to Max ready dead letters of the queue, oldest first, to
// To or, when To is "", back to the queues they were dead-lettered from.
// Only the queue's creator may, unless Admin.
//
// Encoding: Tag, 'V', flags (flagAdmin), str Queue, str User, uvarint Max
// (1 to MaxRedrive), str To (may be empty).
type Redrive struct {
	Queue string
	User  string
	Admin bool
	Max   int
	To    string
}

// Import adds messages moved from queue Source (created at Raft index
// Incarnation of its partition) to the queue: dead letters and redriven
// messages. Each carries the sequence number of its source outbox entry;
// the queue keeps the highest it took from Source so that a repeated
// Import takes nothing twice. Proposed by the mover (Service.Move), never
// by a user.
//
// Encoding: Tag, 'I', 0, str Queue, str "" (no user), str Source, uvarint
// Incarnation, uvarint n (1 to MaxBatch), then per entry uvarint Seq and
// bytes Record (a message record, ready and unleased).
type Import struct {
	Queue       string
	User        string
	Source      string
	Incarnation uint64
	Entries     []ImportEntry
}

// ImportEntry is one moved message of an Import.
type ImportEntry struct {
	Seq    uint64
	Record []byte
}

// OutDone removes the queue's outbox entries up to Through, once moved (or,
// with Dropped, once found undeliverable: their target queue is gone). It
// does nothing unless the queue is the incarnation the entries were read
// from: a queue deleted and created again starts its outbox afresh.
//
// Encoding: Tag, 'O', 0, str Queue, str "", uvarint Through, byte Dropped,
// uvarint Incarnation.
type OutDone struct {
	Queue       string
	User        string
	Through     uint64
	Dropped     bool
	Incarnation uint64
}

// Tick does a queue's timed work now: returns lapsed leases, delivers due
// delayed messages and expires messages, as every other command on the
// queue also does. Proposed by the partition leader's mover.
//
// Encoding: Tag, 'T', 0, str Queue, str "".
type Tick struct {
	Queue string
	User  string
}

func (c SendBatch) queueName() string { return c.Queue }
func (c Nack) queueName() string      { return c.Queue }
func (c Extend) queueName() string    { return c.Queue }
func (c Configure) queueName() string { return c.Queue }
func (c Purge) queueName() string     { return c.Queue }
func (c Redrive) queueName() string   { return c.Queue }
func (c Import) queueName() string    { return c.Queue }
func (c OutDone) queueName() string   { return c.Queue }
func (c Tick) queueName() string      { return c.Queue }

// Settings are a queue's delivery settings.
type Settings struct {
	// MaxDeliveries is how many times a message may be leased; the message
	// is dead-lettered (or dropped) when a lease beyond it would start. 0
	// is unlimited. Default DefaultMaxDeliveries.
	MaxDeliveries uint64
	// DeadLetter is the queue dead letters go to; "" drops them.
	DeadLetter string
	// TTLMs, when > 0, expires every message sent to the queue that long
	// after its send (a message's own TTL may be shorter).
	TTLMs int64
	// MaxLength, when > 0, bounds the messages that are not leased.
	MaxLength uint64
	// DropOldest makes a send to a full queue drop (or dead-letter) the
	// oldest message instead of being refused.
	DropOldest bool
}

// DefaultMaxDeliveries is the delivery limit of a new queue, as RabbitMQ 4
// sets for quorum queues.
const DefaultMaxDeliveries = 20

// Setting bits of SettingsUpdate.Set.
const (
	SetMaxDeliveries uint8 = 1 << iota
	SetDeadLetter
	SetTTL
	SetMaxLength
	SetOverflow
	setAll = SetMaxDeliveries | SetDeadLetter | SetTTL | SetMaxLength | SetOverflow
)

// SettingsUpdate changes the settings named by Set to their value in
// Settings.
type SettingsUpdate struct {
	Set uint8
	Settings
}

// appendSettings encodes u: byte Set, uvarint MaxDeliveries, str
// DeadLetter, uvarint TTLMs, uvarint MaxLength, byte DropOldest. Fields not
// in Set must be zero.
func appendSettings(b []byte, u SettingsUpdate) []byte {
	b = append(b, u.Set)
	b = binary.AppendUvarint(b, u.MaxDeliveries)
	b = wire.AppendString(b, u.DeadLetter)
	b = binary.AppendUvarint(b, uint64(u.TTLMs))
	b = binary.AppendUvarint(b, u.MaxLength)
	return append(b, boolByte(u.DropOldest))
}

// appendSendOptions encodes o: byte Priority, uvarint DelayMs, uvarint
// DeliverAtMs, uvarint TTLMs, str Group (may be empty).
func appendSendOptions(b []byte, o SendOptions) []byte {
	b = append(b, o.Priority)
	b = binary.AppendUvarint(b, uint64(o.DelayMs))
	b = binary.AppendUvarint(b, uint64(o.DeliverAtMs))
	b = binary.AppendUvarint(b, uint64(o.TTLMs))
	return wire.AppendString(b, o.Group)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// EncodeSendBatch returns the binary encoding of s.
func EncodeSendBatch(s SendBatch) []byte {
	b := appendHeader(make([]byte, 0, headerCap(s.Queue, s.User)+binary.MaxVarintLen16), opBatch, 0, s.Queue, s.User)
	b = binary.AppendUvarint(b, uint64(len(s.Messages)))
	for _, m := range s.Messages {
		b = wire.AppendString(b, m.To)
		b = appendSendOptions(b, m.SendOptions)
		b = wire.AppendBytes(b, m.Body)
	}
	return b
}

// EncodeNack returns the binary encoding of n.
func EncodeNack(n Nack) []byte {
	b := appendHeader(make([]byte, 0, headerCap(n.Queue, n.User)+32+len(n.Reason)), opNack, 0, n.Queue, n.User)
	b = binary.AppendUvarint(b, n.ID)
	b = binary.AppendUvarint(b, n.Lease)
	b = binary.AppendUvarint(b, uint64(n.DelayMs))
	b = append(b, boolByte(n.Dead))
	return wire.AppendString(b, n.Reason)
}

// EncodeExtend returns the binary encoding of e.
func EncodeExtend(e Extend) []byte {
	b := appendHeader(make([]byte, 0, headerCap(e.Queue, e.User)+30), opExtend, 0, e.Queue, e.User)
	b = binary.AppendUvarint(b, e.ID)
	b = binary.AppendUvarint(b, e.Lease)
	return binary.AppendUvarint(b, uint64(e.AckTimeoutMs))
}

func adminFlag(admin bool) byte {
	if admin {
		return flagAdmin
	}
	return 0
}

// EncodeConfigure returns the binary encoding of c.
func EncodeConfigure(c Configure) []byte {
	b := appendHeader(make([]byte, 0, headerCap(c.Queue, c.User)+40+len(c.Settings.DeadLetter)), opConfig, adminFlag(c.Admin), c.Queue, c.User)
	return appendSettings(b, c.Settings)
}

// EncodePurge returns the binary encoding of p.
func EncodePurge(p Purge) []byte {
	return appendHeader(make([]byte, 0, headerCap(p.Queue, p.User)), opPurge, adminFlag(p.Admin), p.Queue, p.User)
}

// EncodeRedrive returns the binary encoding of r.
func EncodeRedrive(r Redrive) []byte {
	b := appendHeader(make([]byte, 0, headerCap(r.Queue, r.User)+12+len(r.To)), opRedrive, adminFlag(r.Admin), r.Queue, r.User)
	b = binary.AppendUvarint(b, uint64(r.Max))
	return wire.AppendString(b, r.To)
}

// EncodeImport returns the binary encoding of i.
func EncodeImport(i Import) []byte {
	b := appendHeader(make([]byte, 0, headerCap(i.Queue, i.User)+64), opImport, 0, i.Queue, i.User)
	b = wire.AppendString(b, i.Source)
	b = binary.AppendUvarint(b, i.Incarnation)
	b = binary.AppendUvarint(b, uint64(len(i.Entries)))
	for _, e := range i.Entries {
		b = binary.AppendUvarint(b, e.Seq)
		b = wire.AppendBytes(b, e.Record)
	}
	return b
}

// EncodeOutDone returns the binary encoding of o.
func EncodeOutDone(o OutDone) []byte {
	b := appendHeader(make([]byte, 0, headerCap(o.Queue, o.User)+11), opOutDone, 0, o.Queue, o.User)
	b = append(binary.AppendUvarint(b, o.Through), boolByte(o.Dropped))
	return binary.AppendUvarint(b, o.Incarnation)
}

// EncodeTick returns the binary encoding of t.
func EncodeTick(t Tick) []byte {
	return appendHeader(make([]byte, 0, headerCap(t.Queue, t.User)), opTick, 0, t.Queue, t.User)
}

// Encode returns the binary encoding of any command.
func Encode(c Command) []byte {
	switch c := c.(type) {
	case Create:
		return EncodeCreate(c)
	case Delete:
		return EncodeDelete(c)
	case Send:
		return EncodeSend(c)
	case SendBatch:
		return EncodeSendBatch(c)
	case Receive:
		return EncodeReceive(c)
	case Ack:
		return EncodeAck(c)
	case Nack:
		return EncodeNack(c)
	case Extend:
		return EncodeExtend(c)
	case Configure:
		return EncodeConfigure(c)
	case Purge:
		return EncodePurge(c)
	case Redrive:
		return EncodeRedrive(c)
	case Import:
		return EncodeImport(c)
	case OutDone:
		return EncodeOutDone(c)
	case Tick:
		return EncodeTick(c)
	}
	panic(fmt.Sprintf("queue: Encode of %T", c))
}

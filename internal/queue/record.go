package queue

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/wire"
)

// Key prefixes; see the package doc for the whole layout.
const (
	recordPrefix = "q/!/" // queue records
	dataPrefix   = "q/"   // every queue's messages and indexes: "q/<queue>/"
)

// rankLen is the length of a ready-index position before the id: one byte,
// 9 minus the priority, so that higher priorities sort first.
const rankLen = 1

// keys builds the state keys of one queue. Users are folded (fold) by the
// caller.
type keys struct {
	p string // "q/<queue>/"
}

func keysOf(queue string) keys { return keys{p: dataPrefix + queue + "/"} }

// recordKey returns the key of a queue's record.
func recordKey(queue string) []byte {
	b := make([]byte, 0, len(recordPrefix)+len(queue))
	return append(append(b, recordPrefix...), queue...)
}

// all returns the prefix of every key of the queue's messages and indexes.
func (k keys) all() []byte { return []byte(k.p) }

func (k keys) build(n int, parts ...string) []byte {
	size := len(k.p) + n
	for _, s := range parts {
		size += len(s)
	}
	b := make([]byte, 0, size)
	b = append(b, k.p...)
	for _, s := range parts {
		b = append(b, s...)
	}
	return b
}

func appendID(b []byte, id uint64) []byte { return binary.BigEndian.AppendUint64(b, id) }

// msg is the key of a message record.
func (k keys) msg(id uint64) []byte { return appendID(k.build(8, "m/"), id) }

// msgPrefix is the prefix of every message record.
func (k keys) msgPrefix() []byte { return k.build(0, "m/") }

// readyPrefix returns the prefix of a ready index: for anyone (receiver "")
// or for one receiver, over all senders (bySender false) or one sender.
// It leaves room to append a position without reallocating.
func (k keys) readyPrefix(bySender bool, sender, receiver string) []byte {
	const n = rankLen + 8
	switch {
	case !bySender && receiver == "":
		return k.build(n, "a/")
	case !bySender:
		return k.build(n, "r/", receiver, "/")
	case receiver == "":
		return k.build(n, "s/", sender, "/a/")
	default:
		return k.build(n, "s/", sender, "/r/", receiver, "/")
	}
}

// floor returns the key of a ready index's floor: a lower bound of the
// positions in the index, so that a seek for its first entry starts there
// instead of stepping over the deleted entries before it. prefix is from
// readyPrefix.
func (k keys) floor(prefix []byte) []byte {
	return k.build(len(prefix)-len(k.p), "f/", string(prefix[len(k.p):]))
}

// position is a message's place in the ready indexes: its rank, then its
// id. Positions compare as numbers.
type position struct {
	rank byte
	id   uint64
}

func positionOf(m *messageRecord, id uint64) position {
	return position{rank: 9 - m.priority, id: id}
}

func (p position) less(o position) bool {
	return p.rank < o.rank || p.rank == o.rank && p.id < o.id
}

func (p position) append(b []byte) []byte { return appendID(append(b, p.rank), p.id) }

// readyKeys returns the two index keys of a ready message: by receiver and by
// sender.
func (k keys) readyKeys(m *messageRecord, id uint64) (byReceiver, bySender []byte) {
	sender, receiver, pos := ident.Fold(m.sender), ident.Fold(m.receiver), positionOf(m, id)
	return pos.append(k.readyPrefix(false, "", receiver)), pos.append(k.readyPrefix(true, sender, receiver))
}

// leasePrefix is the prefix of the timer index: leased and delayed messages
// by the time they become ready again.
func (k keys) leasePrefix() []byte { return k.build(0, "l/") }

// lease is the timer-index key of message id due at t.
func (k keys) lease(t int64, id uint64) []byte {
	b := appendID(k.build(17, "l/"), sortableTime(t))
	return appendID(append(b, '/'), id)
}

// expiryPrefix is the prefix of the expiry index: messages with a TTL that
// are not leased, by expiry.
func (k keys) expiryPrefix() []byte { return k.build(0, "e/") }

// expiry is the expiry-index key of message id expiring at t.
func (k keys) expiry(t int64, id uint64) []byte {
	b := appendID(k.build(17, "e/"), sortableTime(t))
	return appendID(append(b, '/'), id)
}

// timeKeyParts returns the time and message id of a timer- or expiry-index
// key.
func (k keys) timeKeyParts(key []byte) (int64, uint64, error) {
	rest := key[len(k.p):]
	if len(rest) != 2+8+1+8 {
		return 0, 0, fmt.Errorf("queue: corrupt time key %q", key)
	}
	return int64(binary.BigEndian.Uint64(rest[2:]) ^ 1<<63), binary.BigEndian.Uint64(rest[11:]), nil
}

// group is the key of a FIFO group's record.
func (k keys) group(g string) []byte { return k.build(0, "g/", g) }

// waitingPrefix is the prefix of a group's waiting messages.
func (k keys) waitingPrefix(g string) []byte { return k.build(8, "w/", g, "/") }

// waiting is the key of a message waiting behind its group's active one.
func (k keys) waiting(g string, id uint64) []byte { return appendID(k.waitingPrefix(g), id) }

// outbox is the key of an outbox entry: a message on its way to another
// queue.
func (k keys) outbox(seq uint64) []byte { return appendID(k.build(8, "o/"), seq) }

// outboxPrefix is the prefix of the outbox.
func (k keys) outboxPrefix() []byte { return k.build(0, "o/") }

// imported is the key of the high-water mark of the moves from source into
// this queue.
func (k keys) imported(source string) []byte { return k.build(0, "i/", source) }

// sortableTime maps a signed time to an unsigned value with the same order.
func sortableTime(t int64) uint64 { return uint64(t) ^ 1<<63 }

// idAt returns the message id at the end of an index key.
func idAt(key []byte) (uint64, error) {
	if len(key) < 8 {
		return 0, fmt.Errorf("queue: corrupt index key %q", key)
	}
	return binary.BigEndian.Uint64(key[len(key)-8:]), nil
}

// positionAt returns the position at the end of a ready-index key.
func positionAt(key []byte) (position, error) {
	if len(key) < rankLen+8 {
		return position{}, fmt.Errorf("queue: corrupt index key %q", key)
	}
	n := len(key) - 9
	return position{rank: key[n], id: binary.BigEndian.Uint64(key[n+1:])}, nil
}

// Overflow values: what a send to a full queue does.
const (
	overflowReject     byte = 0 // refuse the send (errs.Conflict)
	overflowDropOldest byte = 1 // drop (or dead-letter) the oldest waiting message
)

// queueRecord is a queue's stored record.
//
// Encoding: the uint64 fields in order, 8 bytes big endian each
// (queueRecordFixed of them), overflow byte, str deadLetter (may be empty),
// creator (the rest).
type queueRecord struct {
	nextID    uint64 // the id the next message gets; 1 for a new queue
	messages  uint64 // stored messages, in every state
	leased    uint64 // messages under a lease
	delayed   uint64 // messages waiting for their delivery time
	waiting   uint64 // messages waiting behind an earlier one of their group
	deadHeld  uint64 // stored messages that arrived as dead letters
	createdMs int64
	lastMs    int64  // time of the last send, so that message times never decrease
	version   uint64 // Raft index of the last command that changed the queue
	// leaseFloor, while leased+delayed > 0, is at most the earliest time in
	// the timer index, so that commands look for due timers only when one
	// may be due.
	leaseFloor int64
	// expiring counts the expiry-index entries; expiryFloor, while it is
	// not 0, is at most the earliest of them.
	expiring    uint64
	expiryFloor int64
	incarnation uint64 // Raft index of the queue's Create
	outNext     uint64 // the sequence number of the next outbox entry
	outFloor    uint64 // every outbox entry below it has been moved
	deadOut     uint64 // messages dead-lettered from this queue, ever
	dropped     uint64 // messages dropped: limits, no dead-letter queue
	expired     uint64 // messages whose TTL ran out, ever
	msgFloor    uint64 // no message below this id exists

	maxDeliveries uint64 // 0: unlimited
	ttlMs         int64  // 0: none
	maxLength     uint64 // 0: unlimited
	overflow      byte
	deadLetter    string
	creator       string

	key []byte // the record's state key; not stored
}

const queueRecordFixed = 22

// mayHaveLapsed reports whether a timer of the queue (a lease or a delay)
// may be due at t.
func (q *queueRecord) mayHaveLapsed(t int64) bool {
	return q.leased+q.delayed > 0 && t > q.leaseFloor
}

// mayExpire reports whether a message of the queue may have expired at t.
func (q *queueRecord) mayExpire(t int64) bool { return q.expiring > 0 && t >= q.expiryFloor }

// ready returns the number of messages that are ready to be received.
func (q *queueRecord) ready() uint64 { return q.messages - q.leased - q.delayed - q.waiting }

// fixed returns the record's fixed fields in their stored order: unsigned
// fields as they are, signed ones (times) as their two's complement bits.
func (q *queueRecord) fixed() [queueRecordFixed]uint64 {
	return [queueRecordFixed]uint64{
		q.nextID, q.messages, q.leased, q.delayed, q.waiting, q.deadHeld,
		uint64(q.createdMs), uint64(q.lastMs), q.version, uint64(q.leaseFloor), q.expiring,
		uint64(q.expiryFloor), q.incarnation, q.outNext, q.outFloor, q.deadOut, q.dropped,
		q.expired, q.msgFloor, q.maxDeliveries, uint64(q.ttlMs), q.maxLength,
	}
}

// setFixed sets the fixed fields from f, in fixed's order.
func (q *queueRecord) setFixed(f *[queueRecordFixed]uint64) {
	q.nextID, q.messages, q.leased, q.delayed, q.waiting, q.deadHeld = f[0], f[1], f[2], f[3], f[4], f[5]
	q.createdMs, q.lastMs, q.version, q.leaseFloor, q.expiring = int64(f[6]), int64(f[7]), f[8], int64(f[9]), f[10]
	q.expiryFloor, q.incarnation, q.outNext, q.outFloor, q.deadOut, q.dropped = int64(f[11]), f[12], f[13], f[14], f[15], f[16]
	q.expired, q.msgFloor, q.maxDeliveries, q.ttlMs, q.maxLength = f[17], f[18], f[19], int64(f[20]), f[21]
}

func (q *queueRecord) encode() []byte {
	b := make([]byte, 0, 8*queueRecordFixed+2+len(q.deadLetter)+len(q.creator))
	for _, f := range q.fixed() {
		b = binary.BigEndian.AppendUint64(b, f)
	}
	b = append(b, q.overflow)
	b = wire.AppendString(b, q.deadLetter)
	return append(b, q.creator...)
}

// decodeQueueRecord decodes the record of queue name stored under key.
func decodeQueueRecord(name string, key, b []byte) (queueRecord, error) {
	q := queueRecord{key: key}
	if len(b) < 8*queueRecordFixed+2 {
		return queueRecord{}, fmt.Errorf("queue: corrupt record of %q: %d bytes", name, len(b))
	}
	var f [queueRecordFixed]uint64
	for i := range f {
		f[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	q.setFixed(&f)
	rest := b[8*queueRecordFixed:]
	q.overflow = rest[0]
	dl, rest, err := readName(rest[1:], "dead-letter queue", true)
	if err != nil {
		return queueRecord{}, fmt.Errorf("queue: corrupt record of %q: %w", name, err)
	}
	q.deadLetter, q.creator = dl, string(rest)
	if q.nextID == 0 || q.leased+q.delayed+q.waiting > q.messages || q.messages >= q.nextID || q.outFloor > q.outNext {
		return queueRecord{}, fmt.Errorf("queue: corrupt record of %q: next id %d, %d messages, %d leased, %d delayed, %d waiting",
			name, q.nextID, q.messages, q.leased, q.delayed, q.waiting)
	}
	return q, nil
}

// Message states, stored in the message record.
const (
	stateReady   byte = 0 // in the ready indexes
	stateLeased  byte = 1 // in the timer index, held by a receiver
	stateDelayed byte = 2 // in the timer index until its delivery time
	stateWaiting byte = 3 // behind an earlier message of its group
)

// messageRecord is a stored message.
//
// Encoding: timeMs, deliveries, until, leaseIndex, expiresMs (8 bytes big
// endian each), state byte, priority byte, str sender, str receiver, str
// holder, str group, str origin, str deadReason, str lastReason (uvarint
// length and bytes, each may be empty), body (the rest).
type messageRecord struct {
	timeMs     int64
	deliveries uint64 // receives so far, leased ones included
	// until is, while leased, when the lease lapses (it lasts while TimeMs
	// <= until); while delayed or waiting, when it may be delivered.
	until      int64
	leaseIndex uint64 // while leased: Raft index of the receive; else 0
	expiresMs  int64  // when its TTL runs out; 0: never
	state      byte
	priority   byte // 0 to 9, higher first
	sender     string
	receiver   string // "" for anyone
	holder     string // while leased: the user who received it
	group      string // FIFO group; "" for none
	// Dead letters: the queue the message was first dead-lettered from, why,
	// and the reason of its last nack. All "" otherwise.
	origin, deadReason, lastReason string
	body                           []byte
}

const messageFixedLen = 42

func (m *messageRecord) encode() []byte {
	n := messageFixedLen + 7*binary.MaxVarintLen16 + len(m.sender) + len(m.receiver) + len(m.holder) +
		len(m.group) + len(m.origin) + len(m.deadReason) + len(m.lastReason) + len(m.body)
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint64(b, uint64(m.timeMs))
	b = binary.BigEndian.AppendUint64(b, m.deliveries)
	b = binary.BigEndian.AppendUint64(b, uint64(m.until))
	b = binary.BigEndian.AppendUint64(b, m.leaseIndex)
	b = binary.BigEndian.AppendUint64(b, uint64(m.expiresMs))
	b = append(b, m.state, m.priority)
	for _, s := range m.strings() {
		b = wire.AppendString(b, *s)
	}
	return append(b, m.body...)
}

func (m *messageRecord) strings() [7]*string {
	return [7]*string{&m.sender, &m.receiver, &m.holder, &m.group, &m.origin, &m.deadReason, &m.lastReason}
}

// decodeMessageRecord decodes a message record; body aliases b.
func decodeMessageRecord(key, b []byte) (messageRecord, error) {
	if len(b) < messageFixedLen {
		return messageRecord{}, fmt.Errorf("queue: corrupt message under %q: %d bytes", key, len(b))
	}
	m := messageRecord{
		timeMs:     int64(binary.BigEndian.Uint64(b)),
		deliveries: binary.BigEndian.Uint64(b[8:]),
		until:      int64(binary.BigEndian.Uint64(b[16:])),
		leaseIndex: binary.BigEndian.Uint64(b[24:]),
		expiresMs:  int64(binary.BigEndian.Uint64(b[32:])),
		state:      b[40],
		priority:   b[41],
	}
	if m.state > stateWaiting || m.priority > MaxPriority {
		return messageRecord{}, fmt.Errorf("queue: corrupt message under %q: state %d, priority %d", key, m.state, m.priority)
	}
	rest := b[messageFixedLen:]
	for _, s := range m.strings() {
		v, r, err := wire.Bytes(rest, errMalformed)
		if err != nil {
			return messageRecord{}, fmt.Errorf("queue: corrupt message under %q: %w", key, err)
		}
		*s, rest = string(v), r
	}
	m.body = rest
	return m, nil
}

// eligible reports whether user may receive the message, from sender when
// from is not "". from is folded, user is not.
func (m *messageRecord) eligible(user, from string) bool {
	return (m.receiver == "" || ident.EqualFold(m.receiver, user)) && (from == "" || ident.EqualFold(m.sender, from))
}

// groupRecord is a FIFO group's record, stored while the group has
// messages.
//
// Encoding: active, waiting, floor (8 bytes big endian each).
type groupRecord struct {
	active  uint64 // the id of the group's message that may be delivered; 0 none
	waiting uint64 // messages waiting behind it
	floor   uint64 // no waiting message below this id exists
}

func (g *groupRecord) encode() []byte {
	b := make([]byte, 0, 24)
	b = binary.BigEndian.AppendUint64(b, g.active)
	b = binary.BigEndian.AppendUint64(b, g.waiting)
	return binary.BigEndian.AppendUint64(b, g.floor)
}

func decodeGroupRecord(key, b []byte) (groupRecord, error) {
	if len(b) != 24 {
		return groupRecord{}, fmt.Errorf("queue: corrupt group record under %q: %d bytes", key, len(b))
	}
	return groupRecord{active: binary.BigEndian.Uint64(b), waiting: binary.BigEndian.Uint64(b[8:]), floor: binary.BigEndian.Uint64(b[16:])}, nil
}

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
// It leaves room to append an id without reallocating.
func (k keys) readyPrefix(bySender bool, sender, receiver string) []byte {
	switch {
	case !bySender && receiver == "":
		return k.build(8, "a/")
	case !bySender:
		return k.build(8, "r/", receiver, "/")
	case receiver == "":
		return k.build(8, "s/", sender, "/a/")
	default:
		return k.build(8, "s/", sender, "/r/", receiver, "/")
	}
}

// floor returns the key of a ready index's floor: a lower bound of the ids in
// the index, so that a seek for its oldest entry starts there instead of
// stepping over the deleted entries before it. prefix is from readyPrefix.
func (k keys) floor(prefix []byte) []byte {
	return k.build(len(prefix)-len(k.p), "f/", string(prefix[len(k.p):]))
}

// readyKeys returns the two index keys of a ready message: by receiver and by
// sender.
func (k keys) readyKeys(sender, receiver string, id uint64) (byReceiver, bySender []byte) {
	return appendID(k.readyPrefix(false, "", receiver), id), appendID(k.readyPrefix(true, sender, receiver), id)
}

// leasePrefix is the prefix of the lease index.
func (k keys) leasePrefix() []byte { return k.build(0, "l/") }

// lease is the lease-index key of message id leased until expiry.
func (k keys) lease(expiry int64, id uint64) []byte {
	b := appendID(k.build(17, "l/"), sortableTime(expiry))
	return appendID(append(b, '/'), id)
}

// leaseKeyParts returns the expiry and message id of a lease-index key.
func (k keys) leaseKeyParts(key []byte) (int64, uint64, error) {
	rest := key[len(k.p):]
	if len(rest) != 2+8+1+8 {
		return 0, 0, fmt.Errorf("queue: corrupt lease key %q", key)
	}
	return int64(binary.BigEndian.Uint64(rest[2:]) ^ 1<<63), binary.BigEndian.Uint64(rest[11:]), nil
}

// sortableTime maps a signed time to an unsigned value with the same order.
func sortableTime(t int64) uint64 { return uint64(t) ^ 1<<63 }

// idAt returns the message id at the end of an index key.
func idAt(key []byte) (uint64, error) {
	if len(key) < 8 {
		return 0, fmt.Errorf("queue: corrupt index key %q", key)
	}
	return binary.BigEndian.Uint64(key[len(key)-8:]), nil
}

// queueRecord is a queue's stored record.
//
// Encoding: nextID, messages, leased, createdMs, lastMs, version, leaseFloor
// (8 bytes big endian each), creator (the rest).
type queueRecord struct {
	nextID    uint64 // the id the next message gets; 1 for a new queue
	messages  uint64 // stored messages, leased ones included
	leased    uint64 // messages under a lease
	createdMs int64
	lastMs    int64  // time of the last send, so that message times never decrease
	version   uint64 // Raft index of the last command that changed the queue
	// leaseFloor, while leased > 0, is at most the earliest lease expiry, so
	// that commands look for lapsed leases only when one may have lapsed.
	leaseFloor int64
	creator    string

	key []byte // the record's state key; not stored
}

const queueRecordLen = 56

// mayHaveLapsed reports whether a lease of the queue may have lapsed at t.
func (q *queueRecord) mayHaveLapsed(t int64) bool { return q.leased > 0 && t > q.leaseFloor }

func (q *queueRecord) encode() []byte {
	b := make([]byte, 0, queueRecordLen+len(q.creator))
	b = binary.BigEndian.AppendUint64(b, q.nextID)
	b = binary.BigEndian.AppendUint64(b, q.messages)
	b = binary.BigEndian.AppendUint64(b, q.leased)
	b = binary.BigEndian.AppendUint64(b, uint64(q.createdMs))
	b = binary.BigEndian.AppendUint64(b, uint64(q.lastMs))
	b = binary.BigEndian.AppendUint64(b, q.version)
	b = binary.BigEndian.AppendUint64(b, uint64(q.leaseFloor))
	return append(b, q.creator...)
}

// decodeQueueRecord decodes the record of queue name stored under key.
func decodeQueueRecord(name string, key, b []byte) (queueRecord, error) {
	if len(b) < queueRecordLen {
		return queueRecord{}, fmt.Errorf("queue: corrupt record of %q: %d bytes", name, len(b))
	}
	q := queueRecord{
		nextID:     binary.BigEndian.Uint64(b),
		messages:   binary.BigEndian.Uint64(b[8:]),
		leased:     binary.BigEndian.Uint64(b[16:]),
		createdMs:  int64(binary.BigEndian.Uint64(b[24:])),
		lastMs:     int64(binary.BigEndian.Uint64(b[32:])),
		version:    binary.BigEndian.Uint64(b[40:]),
		leaseFloor: int64(binary.BigEndian.Uint64(b[48:])),
		creator:    string(b[queueRecordLen:]),
		key:        key,
	}
	if q.nextID == 0 || q.leased > q.messages || q.messages >= q.nextID {
		return queueRecord{}, fmt.Errorf("queue: corrupt record of %q: next id %d, %d messages, %d leased", name, q.nextID, q.messages, q.leased)
	}
	return q, nil
}

// info returns the public description of the queue.
func (q *queueRecord) info(name string) QueueInfo {
	return QueueInfo{
		Name:      name,
		Creator:   q.creator,
		CreatedMs: q.createdMs,
		Messages:  q.messages,
		InFlight:  q.leased,
		LastID:    q.nextID - 1,
	}
}

// messageRecord is a stored message.
//
// Encoding: timeMs, deliveries, leaseUntil, leaseIndex (8 bytes big endian
// each), str sender, str receiver, str holder (uvarint length and bytes),
// body (the rest).
type messageRecord struct {
	timeMs     int64
	deliveries uint64 // receives so far, leased ones included
	leaseUntil int64  // while leased: the lease lasts while TimeMs <= leaseUntil
	leaseIndex uint64 // while leased: Raft index of the receive; 0 when ready
	sender     string
	receiver   string // "" for anyone
	holder     string // while leased: the user who received it
	body       []byte
}

const messageFixedLen = 32

func (m *messageRecord) encode() []byte {
	b := make([]byte, 0, messageFixedLen+3*binary.MaxVarintLen16+len(m.sender)+len(m.receiver)+len(m.holder)+len(m.body))
	b = binary.BigEndian.AppendUint64(b, uint64(m.timeMs))
	b = binary.BigEndian.AppendUint64(b, m.deliveries)
	b = binary.BigEndian.AppendUint64(b, uint64(m.leaseUntil))
	b = binary.BigEndian.AppendUint64(b, m.leaseIndex)
	b = wire.AppendString(b, m.sender)
	b = wire.AppendString(b, m.receiver)
	b = wire.AppendString(b, m.holder)
	return append(b, m.body...)
}

// decodeMessageRecord decodes a message record; body aliases b.
func decodeMessageRecord(key, b []byte) (messageRecord, error) {
	if len(b) < messageFixedLen {
		return messageRecord{}, fmt.Errorf("queue: corrupt message under %q: %d bytes", key, len(b))
	}
	m := messageRecord{
		timeMs:     int64(binary.BigEndian.Uint64(b)),
		deliveries: binary.BigEndian.Uint64(b[8:]),
		leaseUntil: int64(binary.BigEndian.Uint64(b[16:])),
		leaseIndex: binary.BigEndian.Uint64(b[24:]),
	}
	rest := b[messageFixedLen:]
	var err error
	for _, s := range []*string{&m.sender, &m.receiver, &m.holder} {
		if *s, rest, err = readName(rest, "name", true); err != nil {
			return messageRecord{}, fmt.Errorf("queue: corrupt message under %q: %w", key, err)
		}
	}
	m.body = rest
	return m, nil
}

// eligible reports whether user may receive the message, from sender when
// from is not "". from is folded, user is not.
func (m *messageRecord) eligible(user, from string) bool {
	return (m.receiver == "" || ident.EqualFold(m.receiver, user)) && (from == "" || ident.EqualFold(m.sender, from))
}

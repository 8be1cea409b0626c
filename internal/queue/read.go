package queue

import (
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// MaxReapPerApply bounds the lapsed leases one command returns to its queue,
// and the lapsed leases one read considers, so that neither does unbounded
// work. A larger burst of lapsed leases returns over the following commands.
const MaxReapPerApply = 256

// Message is a queued message as Peek and Receive return it.
type Message struct {
	// ID grows by one with every send to the queue, from 1.
	ID uint64
	// Sender is the user who sent the message.
	Sender string
	// Receiver is the user the message is for; "" for anyone.
	Receiver string
	// TimeMs is the leader-stamped time of the send, Unix ms.
	TimeMs int64
	// Body is the message. It may share memory with the command result it
	// was decoded from: callers must not modify it.
	Body []byte
	// Deliveries counts the receives of the message, this one included for
	// Receive; for Peek, the receives so far (leases that lapsed).
	Deliveries uint64
	// Receipt, set only by a leased Receive, acknowledges the message.
	Receipt string
	// LeaseExpiresMs, set only by a leased Receive: the lease lasts while the
	// leader-stamped time is at most this; after it the message is eligible
	// again and Ack is refused.
	LeaseExpiresMs int64
	// Priority is 0 to MaxPriority.
	Priority int
	// Group is the message's FIFO group, "" for none.
	Group string
	// ExpiresMs is when the message's TTL runs out (Unix ms), 0 never.
	ExpiresMs int64
	// DeliverAtMs, for a delayed message (Browse), is when it becomes ready.
	DeliverAtMs int64
	// State is "ready", "leased", "delayed" or "waiting" (behind an earlier
	// message of its group).
	State string
	// Origin, for a dead letter, is the queue it was dead-lettered from;
	// DeadReason why ("rejected", "delivery_limit", "expired",
	// "max_length"); LastReason the reason given with its last nack.
	Origin, DeadReason, LastReason string
}

// QueueInfo describes a queue.
type QueueInfo struct {
	Name      string
	Creator   string
	CreatedMs int64
	// Messages counts the stored messages, in flight ones included.
	Messages uint64
	// InFlight counts the messages under a lease (lapsed leases not yet
	// returned to the queue included).
	InFlight uint64
	// LastID is the id of the last message sent, 0 when none was.
	LastID uint64
	// Stats counts the messages by state and what left the queue.
	Stats Stats
	// Settings are the queue's delivery settings.
	Settings Settings
}

// Stats are a queue's counts.
type Stats struct {
	// Ready, Leased, Delayed and Waiting count the stored messages by state
	// (Waiting: behind an earlier message of their FIFO group). Leased
	// includes lapsed leases not yet returned.
	Ready, Leased, Delayed, Waiting uint64
	// DeadLetters counts the stored messages that arrived as dead letters.
	DeadLetters uint64
	// DeadLettered, Dropped and Expired count, since the queue was
	// created, the messages it sent to its dead-letter queue, dropped
	// (limits without a dead-letter queue, or a dead-letter queue that no
	// longer existed) and that expired (dead-lettered or dropped).
	DeadLettered, Dropped, Expired uint64
	// Moving counts the messages on their way out to another queue (dead
	// letters, redriven messages) that it has not confirmed yet.
	Moving uint64
	// OldestMs is the send time of the oldest stored message, 0 when empty.
	OldestMs int64
}

// Peek returns the message Receive would take for user (from one sender when
// from is not ""), at wall time nowMs, without taking it; found is false when
// there is none. A missing queue is errs.NotFound; any other error means the
// state could not be read or is corrupt.
func Peek(r state.Reader, queue, user, from string, nowMs int64) (msg Message, found bool, err error) {
	q, ok, err := loadQueue(r, queue)
	if err != nil {
		return Message{}, false, err
	}
	if !ok {
		return Message{}, false, errs.New(errs.NotFound, "queue %q does not exist", queue)
	}
	k := keysOf(queue)
	id, found, err := oldestEligible(r, k, &q, user, from, nowMs)
	if err != nil || !found {
		return Message{}, false, err
	}
	m, ok, err := loadMessage(r, k, id)
	if err != nil {
		return Message{}, false, err
	}
	if !ok {
		return Message{}, false, fmt.Errorf("queue: index of %q names missing message %d", queue, id)
	}
	msg = messageOf(id, &m)
	msg.State, msg.Receipt, msg.LeaseExpiresMs, msg.DeliverAtMs = "ready", "", 0, 0
	return msg, true, nil
}

// List returns every queue of a partition's state, in name order.
func List(r state.Reader) ([]QueueInfo, error) {
	var infos []QueueInfo
	err := scanQueues(r, func(name string, q *queueRecord) error {
		info, err := q.info(r, name)
		infos = append(infos, info)
		return err
	})
	return infos, err
}

// Waiting returns the queues of a partition's state that hold a message user
// may receive at wall time nowMs, in name order.
func Waiting(r state.Reader, user string, nowMs int64) ([]QueueInfo, error) {
	var recs []queueEntry
	err := scanQueues(r, func(name string, q *queueRecord) error {
		if q.messages > 0 {
			recs = append(recs, queueEntry{name, *q})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var infos []QueueInfo
	for i := range recs {
		e := &recs[i]
		_, found, err := oldestEligible(r, keysOf(e.name), &e.rec, user, "", nowMs)
		if err != nil {
			return nil, err
		}
		if found {
			info, err := e.rec.info(r, e.name)
			if err != nil {
				return nil, err
			}
			infos = append(infos, info)
		}
	}
	return infos, nil
}

type queueEntry struct {
	name string
	rec  queueRecord
}

// probeResult is what a long poll learns from a read between attempts.
type probeResult struct {
	ready       bool   // a message is eligible for the caller
	version     uint64 // the queue's version: Raft index of its last change
	nextLapseMs int64  // the earliest lease expiry in the queue, 0 when none
}

// probe reads whether queue holds a message user may receive (from one
// sender when from is not "") at wall time nowMs. A missing queue is
// errs.NotFound.
func probe(r state.Reader, queue, user, from string, nowMs int64) (probeResult, error) {
	q, ok, err := loadQueue(r, queue)
	if err != nil {
		return probeResult{}, err
	}
	if !ok {
		return probeResult{}, errs.New(errs.NotFound, "queue %q does not exist", queue)
	}
	k := keysOf(queue)
	res := probeResult{version: q.version}
	if _, res.ready, err = oldestEligible(r, k, &q, user, from, nowMs); err != nil || res.ready {
		return res, err
	}
	if q.leased > 0 {
		res.nextLapseMs, _, err = nextLapse(r, k, &q)
	}
	return res, err
}

// scanQueues calls fn for every queue record in name order.
func scanQueues(r state.Reader, fn func(name string, q *queueRecord) error) error {
	lo := []byte(recordPrefix)
	var err error
	// Every command rewrites its queue's record: a sparse scan seeks past
	// the versions a busy queue's record leaves in the memtables.
	scanErr := state.ScanSparse(r, lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		name := string(k[len(recordPrefix):])
		var q queueRecord
		if q, err = decodeQueueRecord(name, nil, v); err != nil {
			return false
		}
		err = fn(name, &q)
		return err == nil
	})
	if scanErr != nil {
		return fmt.Errorf("queue: scan queues: %w", scanErr)
	}
	return err
}

// loadQueue reads a queue's record.
func loadQueue(r state.Reader, name string) (queueRecord, bool, error) {
	key := recordKey(name)
	v, found, err := r.Get(key)
	if err != nil {
		return queueRecord{}, false, fmt.Errorf("queue: read %q: %w", name, err)
	}
	if !found {
		return queueRecord{}, false, nil
	}
	q, err := decodeQueueRecord(name, key, v)
	return q, err == nil, err
}

// loadMessage reads a message record.
func loadMessage(r state.Reader, k keys, id uint64) (messageRecord, bool, error) {
	key := k.msg(id)
	v, found, err := r.Get(key)
	if err != nil {
		return messageRecord{}, false, fmt.Errorf("queue: read %q: %w", key, err)
	}
	if !found {
		return messageRecord{}, false, nil
	}
	m, err := decodeMessageRecord(key, v)
	return m, err == nil, err
}

// indexHead is what a seek for the first entry of one ready index found.
type indexHead struct {
	prefix   []byte     // the index's prefix (readyPrefix)
	floors   rankFloors // its stored floors, when hasFloor
	hasFloor bool
	empty    uint16   // the ranks the seek found empty
	pos      position // its first entry, when found
	found    bool
}

// firstEntry is what a scan for the first entry of an index finds.
type firstEntry struct {
	id    uint64
	pos   position
	found bool
	err   error
}

// visit reads an id at the end of the key (waiting and message keys).
func (e *firstEntry) visit(k, _ []byte) bool {
	e.id, e.err = idAt(k)
	e.found = e.err == nil
	return false
}

// visitPosition reads a ready-index position at the end of the key.
func (e *firstEntry) visitPosition(k, _ []byte) bool {
	e.pos, e.err = positionAt(k)
	e.found = e.err == nil
	return false
}

// readyHeads is what oldestReady found: the heads of the anyone index and,
// for a named user, of the user's index (or of their by-sender twins).
type readyHeads struct {
	heads [2]indexHead
	n     int // heads used: 1 or 2
}

// oldest returns the first of the heads' positions.
func (rh *readyHeads) oldest() (position, bool) {
	var pos position
	var found bool
	for _, h := range rh.heads[:rh.n] {
		if h.found && (!found || h.pos.less(pos)) {
			pos, found = h.pos, true
		}
	}
	return pos, found
}

// oldestReady returns the position of the first ready (not leased) message
// user may receive, from one sender when from is not "": the first of the
// first entries of the anyone index and of the user's index.
func oldestReady(r state.Reader, k keys, user, from string) (position, bool, error) {
	rh, err := readyHeadsOf(r, k, user, from)
	if err != nil {
		return position{}, false, err
	}
	pos, found := rh.oldest()
	return pos, found, nil
}

// readyHeadsOf seeks the head of every index oldestReady looks at.
func readyHeadsOf(r state.Reader, k keys, user, from string) (readyHeads, error) {
	bySender, f := from != "", ident.Fold(from)
	var rh readyHeads
	var err error
	if rh.heads[0], err = firstPos(r, k, k.readyPrefix(bySender, f, "")); err != nil || user == "" {
		rh.n = 1
		return rh, err
	}
	rh.heads[1], err = firstPos(r, k, k.readyPrefix(bySender, f, ident.Fold(user)))
	rh.n = 2
	return rh, err
}

// oldestEligible is oldestReady that also counts messages whose timer is
// due at nowMs (lapsed leases, ended delays) but that no command has
// returned to the queue yet (at most MaxReapPerApply of them), for reads.
func oldestEligible(r state.Reader, k keys, q *queueRecord, user, from string, nowMs int64) (uint64, bool, error) {
	pos, found, err := oldestReady(r, k, user, from)
	if err != nil || !q.mayHaveLapsed(nowMs) {
		return pos.id, found, err
	}
	due, _, err := dueTimers(r, k.lease(q.leaseFloor, 0), k, nowMs)
	if err != nil {
		return 0, false, err
	}
	for _, id := range due {
		m, ok, err := loadMessage(r, k, id)
		if err != nil {
			return 0, false, err
		}
		if p := positionOf(&m, id); ok && m.eligible(user, from) && (!found || p.less(pos)) {
			pos, found = p, true
		}
	}
	return pos.id, found, nil
}

// dueTimers returns the ids of a time index's entries (timer or expiry)
// from lo whose time is below limit, earliest first, at most
// MaxReapPerApply of them, and floor, a lower bound of the times of the
// other entries.
func dueTimers(r state.Reader, lo []byte, k keys, limit int64) (ids []uint64, floor int64, err error) {
	floor = limit
	var keyErr error
	hi := state.PrefixEnd(lo[:len(k.p)+2])
	err = r.Scan(lo, hi, func(key, _ []byte) bool {
		var t int64
		var id uint64
		if t, id, keyErr = k.timeKeyParts(key); keyErr != nil {
			return false
		}
		floor = t
		if t >= limit {
			return false
		}
		ids = append(ids, id)
		return len(ids) < MaxReapPerApply
	})
	if err == nil {
		err = keyErr
	}
	if err != nil {
		return nil, 0, fmt.Errorf("queue: scan timers: %w", err)
	}
	return ids, floor, nil
}

// nextLapse returns the earliest time in the queue's timer index, seeking
// from q.leaseFloor.
func nextLapse(r state.Reader, k keys, q *queueRecord) (int64, bool, error) {
	var t int64
	var found bool
	var keyErr error
	p := k.leasePrefix()
	err := r.Scan(k.lease(q.leaseFloor, 0), state.PrefixEnd(p), func(key, _ []byte) bool {
		t, _, keyErr = k.timeKeyParts(key)
		found = keyErr == nil
		return false
	})
	if err == nil {
		err = keyErr
	}
	if err != nil {
		return 0, false, fmt.Errorf("queue: scan timers: %w", err)
	}
	return t, found, nil
}

// oldestUnleased returns the oldest message from id floor on that is not
// leased, looking at no more than MaxReapPerApply leased ones.
func oldestUnleased(r state.Reader, k keys, floor uint64) (uint64, messageRecord, bool, error) {
	var id uint64
	var m messageRecord
	var found bool
	var err error
	looked := 0
	p := k.msgPrefix()
	scanErr := r.Scan(k.msg(floor), state.PrefixEnd(p), func(key, v []byte) bool {
		if id, err = idAt(key); err != nil {
			return false
		}
		if m, err = decodeMessageRecord(key, v); err != nil {
			return false
		}
		looked++
		found = m.state != stateLeased
		return !found && looked < MaxReapPerApply
	})
	if scanErr != nil {
		return 0, messageRecord{}, false, fmt.Errorf("queue: scan messages: %w", scanErr)
	}
	if found {
		m.body = append([]byte(nil), m.body...)
	}
	return id, m, found, err
}

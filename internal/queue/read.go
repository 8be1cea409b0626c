package queue

import (
	"encoding/binary"
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
	return Message{
		ID:         id,
		Sender:     m.sender,
		Receiver:   m.receiver,
		TimeMs:     m.timeMs,
		Body:       m.body,
		Deliveries: m.deliveries,
	}, true, nil
}

// List returns every queue of a partition's state, in name order.
func List(r state.Reader) ([]QueueInfo, error) {
	var infos []QueueInfo
	err := scanQueues(r, func(name string, q *queueRecord) error {
		infos = append(infos, q.info(name))
		return nil
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
			infos = append(infos, e.rec.info(e.name))
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
	scanErr := r.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
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

// indexHead is what a seek for the oldest entry of one ready index found.
type indexHead struct {
	prefix []byte // the index's prefix (readyPrefix)
	floor  uint64 // its stored floor, 0 when none
	id     uint64 // its first entry, when found
	found  bool
}

// firstID returns the first entry of the ready index under prefix, seeking
// from the index's floor.
func firstID(r state.Reader, k keys, prefix []byte) (indexHead, error) {
	h := indexHead{prefix: prefix}
	v, ok, err := r.Get(k.floor(prefix))
	if err != nil {
		return h, fmt.Errorf("queue: read floor of %q: %w", prefix, err)
	}
	if ok {
		if len(v) != 8 {
			return h, fmt.Errorf("queue: corrupt floor of %q: %d bytes", prefix, len(v))
		}
		h.floor = binary.BigEndian.Uint64(v)
	}
	lo := prefix
	if h.floor > 0 {
		lo = appendID(prefix[:len(prefix):len(prefix)], h.floor)
	}
	var e firstEntry // one allocation for the callback's results
	if err := r.Scan(lo, state.PrefixEnd(prefix), e.visit); err != nil {
		return h, fmt.Errorf("queue: scan %q: %w", prefix, err)
	}
	h.id, h.found = e.id, e.found
	return h, e.err
}

// firstEntry is what firstID's scan finds.
type firstEntry struct {
	id    uint64
	found bool
	err   error
}

func (e *firstEntry) visit(k, _ []byte) bool {
	e.id, e.err = idAt(k)
	e.found = e.err == nil
	return false
}

// readyHeads is what oldestReady found: the heads of the anyone index and,
// for a named user, of the user's index (or of their by-sender twins).
type readyHeads struct {
	heads [2]indexHead
	n     int // heads used: 1 or 2
}

// oldest returns the smaller of the heads' ids.
func (rh *readyHeads) oldest() (uint64, bool) {
	var id uint64
	var found bool
	for _, h := range rh.heads[:rh.n] {
		if h.found && (!found || h.id < id) {
			id, found = h.id, true
		}
	}
	return id, found
}

// oldestReady returns the id of the oldest ready (not leased) message user
// may receive, from one sender when from is not "": the smaller of the first
// entries of the anyone index and of the user's index.
func oldestReady(r state.Reader, k keys, user, from string) (uint64, bool, error) {
	rh, err := readyHeadsOf(r, k, user, from)
	if err != nil {
		return 0, false, err
	}
	id, found := rh.oldest()
	return id, found, nil
}

// readyHeadsOf seeks the head of every index oldestReady looks at.
func readyHeadsOf(r state.Reader, k keys, user, from string) (readyHeads, error) {
	bySender, f := from != "", ident.Fold(from)
	var rh readyHeads
	var err error
	if rh.heads[0], err = firstID(r, k, k.readyPrefix(bySender, f, "")); err != nil || user == "" {
		rh.n = 1
		return rh, err
	}
	rh.heads[1], err = firstID(r, k, k.readyPrefix(bySender, f, ident.Fold(user)))
	rh.n = 2
	return rh, err
}

// oldestEligible is oldestReady that also counts leases lapsed at nowMs but
// not yet returned to the queue (at most MaxReapPerApply of them), for reads.
func oldestEligible(r state.Reader, k keys, q *queueRecord, user, from string, nowMs int64) (uint64, bool, error) {
	id, found, err := oldestReady(r, k, user, from)
	if err != nil || !q.mayHaveLapsed(nowMs) {
		return id, found, err
	}
	lapsed, _, err := lapsedLeases(r, k, q, nowMs)
	if err != nil {
		return 0, false, err
	}
	for _, l := range lapsed {
		if found && l >= id {
			continue
		}
		m, ok, err := loadMessage(r, k, l)
		if err != nil {
			return 0, false, err
		}
		if ok && m.eligible(user, from) {
			id, found = l, true
		}
	}
	return id, found, nil
}

// lapsedLeases returns the ids of messages whose lease has lapsed at nowMs
// (expiry < nowMs), earliest expiry first, at most MaxReapPerApply of them,
// and floor, a lower bound of the expiries of the other leases.
// The scan starts at q.leaseFloor, a lower bound of every lease's expiry,
// so that it does not step over the leases acknowledged before it.
func lapsedLeases(r state.Reader, k keys, q *queueRecord, nowMs int64) (ids []uint64, floor int64, err error) {
	floor = nowMs
	var keyErr error
	p := k.leasePrefix()
	err = r.Scan(k.lease(q.leaseFloor, 0), state.PrefixEnd(p), func(key, _ []byte) bool {
		var exp int64
		var id uint64
		if exp, id, keyErr = k.leaseKeyParts(key); keyErr != nil {
			return false
		}
		floor = exp
		if exp >= nowMs {
			return false
		}
		ids = append(ids, id)
		return len(ids) < MaxReapPerApply
	})
	if err == nil {
		err = keyErr
	}
	if err != nil {
		return nil, 0, fmt.Errorf("queue: scan leases: %w", err)
	}
	return ids, floor, nil
}

// nextLapse returns the earliest lease expiry of the queue, seeking from
// q.leaseFloor.
func nextLapse(r state.Reader, k keys, q *queueRecord) (int64, bool, error) {
	var exp int64
	var found bool
	var keyErr error
	p := k.leasePrefix()
	err := r.Scan(k.lease(q.leaseFloor, 0), state.PrefixEnd(p), func(key, _ []byte) bool {
		exp, _, keyErr = k.leaseKeyParts(key)
		found = keyErr == nil
		return false
	})
	if err == nil {
		err = keyErr
	}
	if err != nil {
		return 0, false, fmt.Errorf("queue: scan leases: %w", err)
	}
	return exp, found, nil
}

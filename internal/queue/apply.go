package queue

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// StateMachine applies queue commands to one partition's state. It has no
// fields: everything it needs is in the command, the meta and the state.
// The key layout is in the package doc.
//
// Refusals (a missing queue, an existing one, a delete by someone else, an
// unknown receipt or lapsed lease, a command that does not decode) are
// decided before anything is written, so they leave the state unchanged.
type StateMachine struct{}

var _ state.Applier = StateMachine{}

// Apply implements state.Applier. Its result is decoded by the Service. An
// error means the state could not be read or written, or a stored record is
// corrupt.
func (StateMachine) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	c, err := DecodeCommand(cmd)
	if err != nil {
		return invalidResult(cmd, err), nil
	}
	switch c := c.(type) {
	case Create:
		return applyCreate(w, meta, c)
	case Delete:
		return applyDelete(w, c)
	case Send:
		return applySend(w, meta, c)
	case Receive:
		return applyReceive(w, meta, c)
	case Ack:
		return applyAck(w, meta, c)
	default:
		return invalidResult(cmd, fmt.Errorf("queue: unhandled command %T", c)), nil
	}
}

func notFound(op byte, queue string) []byte {
	return refusal(statusNotFound, op, "queue %q does not exist", queue)
}

func applyCreate(w state.Writer, meta state.Meta, c Create) ([]byte, error) {
	_, found, err := loadQueue(w, c.Queue)
	if err != nil {
		return nil, err
	}
	if found {
		return refusal(statusConflict, opCreate, "queue %q already exists", c.Queue), nil
	}
	q := queueRecord{nextID: 1, createdMs: meta.TimeMs, lastMs: meta.TimeMs, version: meta.Index, creator: c.User, key: recordKey(c.Queue)}
	if err := storeQueue(w, &q); err != nil {
		return nil, err
	}
	return createResult(meta.TimeMs), nil
}

func applyDelete(w state.Writer, c Delete) ([]byte, error) {
	q, found, err := loadQueue(w, c.Queue)
	if err != nil {
		return nil, err
	}
	if !found {
		return notFound(opDelete, c.Queue), nil
	}
	if !c.Admin && !ident.EqualFold(q.creator, c.User) {
		return refusal(statusForbidden, opDelete, "only the creator of queue %q or an admin may delete it", c.Queue), nil
	}
	// Collect first: the Writer does not promise that a scan survives writes.
	var doomed [][]byte
	lo := keysOf(c.Queue).all()
	if err := w.Scan(lo, state.PrefixEnd(lo), func(k, _ []byte) bool {
		doomed = append(doomed, append([]byte(nil), k...))
		return true
	}); err != nil {
		return nil, fmt.Errorf("queue: scan %q: %w", c.Queue, err)
	}
	doomed = append(doomed, q.key)
	for _, k := range doomed {
		if err := w.Delete(k); err != nil {
			return nil, fmt.Errorf("queue: delete %q: %w", k, err)
		}
	}
	return deleteResult(q.messages), nil
}

func applySend(w state.Writer, meta state.Meta, c Send) ([]byte, error) {
	q, found, err := loadQueue(w, c.Queue)
	if err != nil {
		return nil, err
	}
	if !found {
		return notFound(opSend, c.Queue), nil
	}
	k := keysOf(c.Queue)
	if _, err := reap(w, k, &q, meta); err != nil {
		return nil, err
	}
	id := q.nextID
	m := messageRecord{timeMs: max(meta.TimeMs, q.lastMs), sender: c.User, receiver: c.To, body: c.Body}
	if err := set(w, k.msg(id), m.encode()); err != nil {
		return nil, err
	}
	if err := setReady(w, k, &m, id); err != nil {
		return nil, err
	}
	q.nextID++
	q.messages++
	q.lastMs = m.timeMs
	q.version = meta.Index
	if err := storeQueue(w, &q); err != nil {
		return nil, err
	}
	return sendResult(id, m.timeMs), nil
}

func applyReceive(w state.Writer, meta state.Meta, c Receive) ([]byte, error) {
	q, found, err := loadQueue(w, c.Queue)
	if err != nil {
		return nil, err
	}
	if !found {
		return notFound(opReceive, c.Queue), nil
	}
	k := keysOf(c.Queue)
	store, err := reap(w, k, &q, meta)
	if err != nil {
		return nil, err
	}
	rh, err := readyHeadsOf(w, k, c.User, c.From)
	if err != nil {
		return nil, err
	}
	id, found := rh.oldest()
	if err := raiseFloors(w, k, &rh, id, q.nextID); err != nil {
		return nil, err
	}
	if !found {
		var lapse int64
		if q.leased > 0 {
			if lapse, _, err = nextLapse(w, k, &q); err != nil {
				return nil, err
			}
			if lapse > q.leaseFloor { // raise it past the leases acknowledged since
				q.leaseFloor, store = lapse, true
			}
		}
		if store {
			if err := storeQueue(w, &q); err != nil {
				return nil, err
			}
		}
		return encodeReceiveResult(meta.Index, lapse, 0, nil), nil
	}
	m, ok, err := loadMessage(w, k, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("queue: index of %q names missing message %d", c.Queue, id)
	}
	if err := deleteReady(w, k, &m, id); err != nil {
		return nil, err
	}
	m.deliveries++
	if c.AckTimeoutMs == 0 {
		if err := del(w, k.msg(id)); err != nil {
			return nil, err
		}
		q.messages--
	} else {
		m.leaseUntil = meta.TimeMs + c.AckTimeoutMs
		m.leaseIndex = meta.Index
		m.holder = c.User
		if err := set(w, k.msg(id), m.encode()); err != nil {
			return nil, err
		}
		if err := set(w, k.lease(m.leaseUntil, id), nil); err != nil {
			return nil, err
		}
		if q.leased == 0 || m.leaseUntil < q.leaseFloor {
			q.leaseFloor = m.leaseUntil
		}
		q.leased++
	}
	q.version = meta.Index
	if err := storeQueue(w, &q); err != nil {
		return nil, err
	}
	return encodeReceiveResult(meta.Index, 0, id, &m), nil
}

func applyAck(w state.Writer, meta state.Meta, c Ack) ([]byte, error) {
	q, found, err := loadQueue(w, c.Queue)
	if err != nil {
		return nil, err
	}
	if !found {
		return notFound(opAck, c.Queue), nil
	}
	k := keysOf(c.Queue)
	m, ok, err := loadMessage(w, k, c.ID)
	if err != nil {
		return nil, err
	}
	// Someone else's lease is answered like an unknown receipt: receipts
	// are not secrets, leases are.
	if !ok || m.leaseIndex != c.Lease || !ident.EqualFold(m.holder, c.User) {
		return refusal(statusConflict, opAck, "unknown receipt: the message was acknowledged, or its lease lapsed and it was delivered again"), nil
	}
	if meta.TimeMs > m.leaseUntil {
		return refusal(statusConflict, opAck, "the lease lapsed at %d; the message will be delivered again", m.leaseUntil), nil
	}
	if err := del(w, k.msg(c.ID)); err != nil {
		return nil, err
	}
	if err := del(w, k.lease(m.leaseUntil, c.ID)); err != nil {
		return nil, err
	}
	q.messages--
	q.leased--
	q.version = meta.Index
	if _, err := reap(w, k, &q, meta); err != nil {
		return nil, err
	}
	if err := storeQueue(w, &q); err != nil {
		return nil, err
	}
	return ackResult(), nil
}

// reap returns up to MaxReapPerApply messages whose lease lapsed before
// meta.TimeMs to the ready indexes, at their original position. It updates q
// (and reports whether it did) but does not store it.
func reap(w state.Writer, k keys, q *queueRecord, meta state.Meta) (bool, error) {
	if !q.mayHaveLapsed(meta.TimeMs) {
		return false, nil
	}
	ids, floor, err := lapsedLeases(w, k, q, meta.TimeMs)
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		m, ok, err := loadMessage(w, k, id)
		if err != nil {
			return false, err
		}
		if !ok || m.leaseIndex == 0 {
			return false, fmt.Errorf("queue: lease index names message %d that is not leased", id)
		}
		if err := del(w, k.lease(m.leaseUntil, id)); err != nil {
			return false, err
		}
		m.leaseUntil, m.leaseIndex, m.holder = 0, 0, ""
		if err := set(w, k.msg(id), m.encode()); err != nil {
			return false, err
		}
		if err := setReady(w, k, &m, id); err != nil {
			return false, err
		}
		if err := lowerFloors(w, k, &m, id); err != nil {
			return false, err
		}
		q.leased--
		q.version = meta.Index
	}
	q.leaseFloor = floor
	return true, nil
}

// raiseFloors raises the floor of every index rh looked at to what its seek
// proved: that the index holds nothing below its head, nor below the queue's
// next id when it is empty, and nothing up to taken, the id the receive
// takes (0 for none), when that was its head. A send adds ids of at least
// the next id, and a reap lowers the floor it passes (lowerFloors), so the
// floors stay lower bounds. It writes only floors that rise, and no new
// floor for an index that is empty.
func raiseFloors(w state.Writer, k keys, rh *readyHeads, taken, nextID uint64) error {
	for _, h := range rh.heads[:rh.n] {
		f := nextID
		switch {
		case h.found && h.id == taken:
			f = h.id + 1
		case h.found:
			f = h.id
		case h.floor == 0:
			continue
		}
		if f > h.floor {
			if err := setFloor(w, k, h.prefix, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// lowerFloors lowers the floors of the two indexes a reaped message returns
// to, when they are above its id.
func lowerFloors(w state.Writer, k keys, m *messageRecord, id uint64) error {
	sender, receiver := ident.Fold(m.sender), ident.Fold(m.receiver)
	for _, p := range [2][]byte{k.readyPrefix(false, "", receiver), k.readyPrefix(true, sender, receiver)} {
		v, ok, err := w.Get(k.floor(p))
		if err != nil {
			return fmt.Errorf("queue: read floor of %q: %w", p, err)
		}
		if ok && len(v) == 8 && binary.BigEndian.Uint64(v) > id {
			if err := setFloor(w, k, p, id); err != nil {
				return err
			}
		}
	}
	return nil
}

func setFloor(w state.Writer, k keys, prefix []byte, id uint64) error {
	return set(w, k.floor(prefix), binary.BigEndian.AppendUint64(make([]byte, 0, 8), id))
}

func setReady(w state.Writer, k keys, m *messageRecord, id uint64) error {
	a, b := k.readyKeys(ident.Fold(m.sender), ident.Fold(m.receiver), id)
	if err := set(w, a, nil); err != nil {
		return err
	}
	return set(w, b, nil)
}

func deleteReady(w state.Writer, k keys, m *messageRecord, id uint64) error {
	a, b := k.readyKeys(ident.Fold(m.sender), ident.Fold(m.receiver), id)
	if err := del(w, a); err != nil {
		return err
	}
	return del(w, b)
}

// storeQueue stores a queue record read by loadQueue or made by Create.
func storeQueue(w state.Writer, q *queueRecord) error {
	return set(w, q.key, q.encode())
}

func set(w state.Writer, k, v []byte) error {
	if err := w.Set(k, v); err != nil {
		return fmt.Errorf("queue: write %q: %w", k, err)
	}
	return nil
}

func del(w state.Writer, k []byte) error {
	if err := w.Delete(k); err != nil {
		return fmt.Errorf("queue: delete %q: %w", k, err)
	}
	return nil
}

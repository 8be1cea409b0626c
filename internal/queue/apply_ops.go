package queue

import (
	"github.com/parley-chat/parley/internal/ident"
)

// send appends msgs (one for opSend, a batch for opBatch) from user,
// all or none: a queue without room for all of them (max_length with
// overflow reject) refuses them before anything is written.
func (t *tx) send(op byte, user string, msgs []Send) ([]byte, error) {
	q := &t.q
	if q.maxLength > 0 && q.overflow == overflowReject && q.messages-q.leased+uint64(len(msgs)) > q.maxLength {
		return refusal(statusConflict, op, "queue %q is full: it holds %d of its max_length %d messages", t.name, q.messages-q.leased, q.maxLength), nil
	}
	if _, err := t.maintain(); err != nil {
		return nil, err
	}
	timeMs := max(t.now(), q.lastMs)
	ids := make([]uint64, len(msgs))
	for i := range msgs {
		s := &msgs[i]
		m := messageRecord{timeMs: timeMs, priority: s.Priority, sender: user, receiver: s.To, group: s.Group, body: s.Body}
		switch {
		case s.DelayMs > 0:
			m.until = t.now() + s.DelayMs
		case s.DeliverAtMs > 0:
			m.until = s.DeliverAtMs
		}
		m.expiresMs = t.expiry(timeMs, s.TTLMs)
		ids[i] = q.nextID
		q.nextID++
		if err := t.enqueue(&m, ids[i]); err != nil {
			return nil, err
		}
	}
	q.lastMs = timeMs
	if err := t.trim(); err != nil {
		return nil, err
	}
	if err := t.store(); err != nil {
		return nil, err
	}
	if op == opSend {
		return sendResult(ids[0], timeMs), nil
	}
	return batchResult(ids, timeMs), nil
}

// expiry returns when a message sent at timeMs with its own TTL (0: none)
// expires in this queue: after the shorter of its TTL and the queue's; 0
// for never.
func (t *tx) expiry(timeMs, ttlMs int64) int64 {
	if qt := t.q.ttlMs; qt > 0 && (ttlMs == 0 || qt < ttlMs) {
		ttlMs = qt
	}
	if ttlMs == 0 {
		return 0
	}
	return timeMs + ttlMs
}

// trim drops (or dead-letters) the oldest messages that are not leased
// while a queue with overflow drop_oldest holds more than max_length of
// them. It looks at most MaxReapPerApply leased messages on its way.
func (t *tx) trim() error {
	q := &t.q
	if q.maxLength == 0 || q.overflow != overflowDropOldest {
		return nil
	}
	for q.messages-q.leased > q.maxLength {
		id, m, found, err := oldestUnleased(t.w, t.k, q.msgFloor)
		if err != nil || !found {
			return err
		}
		if err := t.retire(&m, id, reasonMaxLength); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) receive(c Receive) ([]byte, error) {
	acked, refused, err := t.ackHeld(c.User, c.Acks)
	if err != nil || refused != nil {
		return refused, err
	}
	changed, err := t.maintain()
	if err != nil {
		return nil, err
	}
	changed = changed || acked
	n := max(c.Max, 1)
	var taken []takenMessage
	expired := 0
	for len(taken) < n && expired < MaxReapPerApply {
		rh, err := readyHeadsOf(t.w, t.k, c.User, c.From)
		if err != nil {
			return nil, err
		}
		pos, found := rh.oldest()
		if err := t.raiseFloors(&rh, pos, found); err != nil {
			return nil, err
		}
		if !found {
			break
		}
		m, err := t.mustLoad(pos.id)
		if err != nil {
			return nil, err
		}
		if m.expiresMs != 0 && m.expiresMs <= t.now() {
			expired++
			if err := t.retire(&m, pos.id, reasonExpired); err != nil {
				return nil, err
			}
			continue
		}
		if err := t.take(&m, pos.id, c); err != nil {
			return nil, err
		}
		taken = append(taken, takenMessage{id: pos.id, m: m})
	}
	var lapse int64
	if len(taken) == 0 && t.q.leased+t.q.delayed > 0 {
		var err error
		if lapse, _, err = nextLapse(t.w, t.k, &t.q); err != nil {
			return nil, err
		}
		if lapse > t.q.leaseFloor { // raise it past the timers removed since
			t.q.leaseFloor, changed = lapse, true
		}
	}
	// A receive that took nothing and had nothing due leaves the record
	// (and its version, which long polls watch) alone.
	if changed || len(taken) > 0 || expired > 0 {
		if err := t.store(); err != nil {
			return nil, err
		}
	}
	return encodeReceiveResult(t.meta.Index, lapse, taken), nil
}

// takenMessage is a message a receive took.
type takenMessage struct {
	id uint64
	m  messageRecord
}

// take takes a ready message for a receive: leases it, or removes it when
// the receive asks for no lease.
func (t *tx) take(m *messageRecord, id uint64, c Receive) error {
	if err := t.unplace(m, id); err != nil {
		return err
	}
	m.deliveries++
	if c.AckTimeoutMs == 0 {
		return t.drop(m, id)
	}
	m.state, m.until, m.leaseIndex, m.holder = stateLeased, t.now()+c.AckTimeoutMs, t.meta.Index, c.User
	if err := t.place(m, id); err != nil {
		return err
	}
	return t.put(m, id)
}

// leased returns the message a receipt names when user holds its lease and
// it has not lapsed, or the refusal to answer.
func (t *tx) leased(op byte, user string, id, lease uint64) (messageRecord, []byte, error) {
	m, ok, err := loadMessage(t.w, t.k, id)
	if err != nil {
		return messageRecord{}, nil, err
	}
	// Someone else's lease is answered like an unknown receipt: receipts
	// are not secrets, leases are.
	if !ok || m.state != stateLeased || m.leaseIndex != lease || !ident.EqualFold(m.holder, user) {
		return m, refusal(statusConflict, op, "unknown receipt: the message was acknowledged, or its lease lapsed and it was delivered again"), nil
	}
	if t.now() > m.until {
		return m, refusal(statusConflict, op, "the lease lapsed at %d; the message will be delivered again", m.until), nil
	}
	return m, nil, nil
}

// ackHeld removes the messages of leases user holds, all or none: it
// checks every lease before it removes any, and refuses, naming the first
// that is unknown or lapsed, with nothing changed. acked reports whether it
// removed any.
//
// Removing one leased message never rewrites another's record (a FIFO
// group has one message in flight; what its removal activates is a waiting
// one), so the records checked are the records removed.
func (t *tx) ackHeld(user string, hs []Held) (acked bool, refused []byte, err error) {
	ms := make([]messageRecord, len(hs))
	for i, h := range hs {
		if ms[i], refused, err = t.leased(opReceive, user, h.ID, h.Lease); err != nil || refused != nil {
			if refused != nil {
				refused = refusal(statusConflict, opReceive, "ack %s: %s", FormatReceipt(h.ID, h.Lease), refused[2:])
			}
			return false, refused, err
		}
	}
	for i, h := range hs {
		if err := t.removeMsg(&ms[i], h.ID); err != nil {
			return false, nil, err
		}
	}
	return len(hs) > 0, nil, nil
}

func (t *tx) ack(c Ack) ([]byte, error) {
	m, refused, err := t.leased(opAck, c.User, c.ID, c.Lease)
	if err != nil || refused != nil {
		return refused, err
	}
	if err := t.removeMsg(&m, c.ID); err != nil {
		return nil, err
	}
	if _, err := t.maintain(); err != nil {
		return nil, err
	}
	if err := t.store(); err != nil {
		return nil, err
	}
	return ackResult(), nil
}

func (t *tx) nack(c Nack) ([]byte, error) {
	m, refused, err := t.leased(opNack, c.User, c.ID, c.Lease)
	if err != nil || refused != nil {
		return refused, err
	}
	if c.Reason != "" {
		m.lastReason = c.Reason
	}
	if c.Dead {
		err = t.retire(&m, c.ID, reasonRejected)
	} else {
		err = t.endLease(&m, c.ID, c.DelayMs)
	}
	if err != nil {
		return nil, err
	}
	if _, err := t.maintain(); err != nil {
		return nil, err
	}
	if err := t.store(); err != nil {
		return nil, err
	}
	return okResult(opNack, 0), nil
}

func (t *tx) extend(c Extend) ([]byte, error) {
	m, refused, err := t.leased(opExtend, c.User, c.ID, c.Lease)
	if err != nil || refused != nil {
		return refused, err
	}
	if err := t.unplace(&m, c.ID); err != nil {
		return nil, err
	}
	m.until = t.now() + c.AckTimeoutMs
	if err := t.place(&m, c.ID); err != nil {
		return nil, err
	}
	if err := t.put(&m, c.ID); err != nil {
		return nil, err
	}
	if err := t.store(); err != nil {
		return nil, err
	}
	return extendResult(m.until), nil
}

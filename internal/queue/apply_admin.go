package queue

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/state"
)

func (t *tx) configure(c Configure) ([]byte, error) {
	if !t.mayAdminister(c.User, c.Admin) {
		return refusal(statusForbidden, opConfig, "only the creator of queue %q or an admin may change its settings", t.name), nil
	}
	if c.Settings.Set&SetDeadLetter != 0 && c.Settings.DeadLetter == t.name {
		return refusal(statusInvalid, opConfig, "dead_letter: queue %q cannot be its own dead-letter queue", t.name), nil
	}
	t.q.apply(c.Settings)
	if err := t.trim(); err != nil {
		return nil, err
	}
	if err := t.store(); err != nil {
		return nil, err
	}
	return configResult(t.q.settings()), nil
}

// settings returns the queue's settings.
func (q *queueRecord) settings() Settings {
	return Settings{MaxDeliveries: q.maxDeliveries, DeadLetter: q.deadLetter, TTLMs: q.ttlMs, MaxLength: q.maxLength, DropOldest: q.overflow == overflowDropOldest}
}

// purge removes every message with its indexes, floors and groups; the
// outbox (messages already on their way elsewhere) and the import marks
// stay.
func (t *tx) purge(c Purge) ([]byte, error) {
	if !t.mayAdminister(c.User, c.Admin) {
		return refusal(statusForbidden, opPurge, "only the creator of queue %q or an admin may purge it", t.name), nil
	}
	if err := t.deleteUnder(func(rest []byte) bool { return rest[0] != 'o' && rest[0] != 'i' }); err != nil {
		return nil, err
	}
	q := &t.q
	purged := q.messages
	q.messages, q.leased, q.delayed, q.waiting, q.deadHeld, q.expiring = 0, 0, 0, 0, 0, 0
	q.leaseFloor, q.expiryFloor, q.msgFloor = 0, 0, q.nextID
	if err := t.store(); err != nil {
		return nil, err
	}
	return countResult(opPurge, purged, false), nil
}

// redrive moves up to c.Max ready dead letters through the outbox, to c.To
// or to their origin. It looks at no more than 4*MaxRedrive messages.
func (t *tx) redrive(c Redrive) ([]byte, error) {
	if !t.mayAdminister(c.User, c.Admin) {
		return refusal(statusForbidden, opRedrive, "only the creator of queue %q or an admin may redrive its dead letters", t.name), nil
	}
	if c.To == t.name {
		return refusal(statusInvalid, opRedrive, "to: the dead letters of %q cannot be redriven into it", t.name), nil
	}
	var picked []takenMessage
	var scanErr error
	scanned := 0
	lo, p := t.k.msg(t.q.msgFloor), t.k.msgPrefix()
	if err := t.w.Scan(lo, state.PrefixEnd(p), func(k, v []byte) bool {
		scanned++
		id, err := idAt(k)
		if err != nil {
			scanErr = err
			return false
		}
		m, err := decodeMessageRecord(k, v)
		if err != nil {
			scanErr = err
			return false
		}
		if m.origin != "" && m.state == stateReady {
			m.body = append([]byte(nil), m.body...)
			picked = append(picked, takenMessage{id: id, m: m})
		}
		return len(picked) < c.Max && scanned < 4*MaxRedrive
	}); err != nil || scanErr != nil {
		return nil, fmt.Errorf("queue: scan %q: %w%w", t.name, err, scanErr)
	}
	for i := range picked {
		m, id := &picked[i].m, picked[i].id
		if err := t.removeMsg(m, id); err != nil {
			return nil, err
		}
		target := c.To
		if target == "" {
			target = m.origin
		}
		moved := messageRecord{timeMs: m.timeMs, priority: m.priority, sender: m.sender, receiver: m.receiver, group: m.group, body: m.body}
		if err := t.toOutbox(target, &moved); err != nil {
			return nil, err
		}
	}
	if err := t.store(); err != nil {
		return nil, err
	}
	return countResult(opRedrive, uint64(len(picked)), t.q.deadHeld > 0), nil
}

// portable reports whether m may be moved between queues: a ready message
// without lease, timer or expiry (the target sets its own).
func (m *messageRecord) portable() bool {
	return m.state == stateReady && m.until == 0 && m.leaseIndex == 0 && m.holder == "" && m.expiresMs == 0
}

// importMessages adds the entries of c it has not taken before: those after
// the mark of c.Source, which it then raises. A full queue takes them all
// the same (dead letters and redriven messages are never refused); with
// overflow drop_oldest it then drops the oldest.
func (t *tx) importMessages(c Import) ([]byte, error) {
	markKey := t.k.imported(c.Source)
	inc, seq, err := t.mark(markKey)
	if err != nil {
		return nil, err
	}
	if _, err := t.maintain(); err != nil {
		return nil, err
	}
	var took uint64
	for _, e := range c.Entries {
		if c.Incarnation < inc || c.Incarnation == inc && e.Seq <= seq {
			continue
		}
		inc, seq = c.Incarnation, e.Seq
		m, err := decodeMessageRecord(markKey, e.Record)
		if err != nil {
			return nil, err
		}
		m.body = append([]byte(nil), m.body...)
		m.expiresMs = t.expiry(t.now(), 0)
		id := t.q.nextID
		t.q.nextID++
		if err := t.enqueue(&m, id); err != nil {
			return nil, err
		}
		took++
	}
	if took > 0 {
		v := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), inc), seq)
		if err := set(t.w, markKey, v); err != nil {
			return nil, err
		}
		if err := t.trim(); err != nil {
			return nil, err
		}
	}
	if err := t.store(); err != nil {
		return nil, err
	}
	return countResult(opImport, took, false), nil
}

// mark reads an import mark: the source's incarnation and the highest
// sequence number taken from it.
func (t *tx) mark(key []byte) (inc, seq uint64, err error) {
	v, ok, err := t.w.Get(key)
	if err != nil || !ok {
		return 0, 0, err
	}
	if len(v) != 16 {
		return 0, 0, fmt.Errorf("queue: corrupt import mark %q: %d bytes", key, len(v))
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), nil
}

// outDone removes the outbox entries up to c.Through that are still there.
func (t *tx) outDone(c OutDone) ([]byte, error) {
	q := &t.q
	if c.Incarnation != q.incarnation {
		return countResult(opOutDone, 0, false), nil // another queue of that name
	}
	if c.Through >= q.outNext {
		return refusal(statusInvalid, opOutDone, "outbox of %q has no entry %d", t.name, c.Through), nil
	}
	var removed uint64
	for ; q.outFloor <= c.Through; q.outFloor++ {
		if err := del(t.w, t.k.outbox(q.outFloor)); err != nil {
			return nil, err
		}
		removed++
	}
	if c.Dropped {
		q.dropped += removed
	}
	if err := t.store(); err != nil {
		return nil, err
	}
	return countResult(opOutDone, removed, false), nil
}

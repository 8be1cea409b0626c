package queue

import (
	"fmt"

	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// Why a message left its queue other than by being taken, as dead letters
// report it.
const (
	reasonRejected  = "rejected"       // nacked with dead
	reasonLimit     = "delivery_limit" // leased max_deliveries times
	reasonExpired   = "expired"        // its TTL ran out
	reasonMaxLength = "max_length"     // dropped from a full queue (drop_oldest)
)

// put stores a message record.
func (t *tx) put(m *messageRecord, id uint64) error { return set(t.w, t.k.msg(id), m.encode()) }

// place adds the index entries of a message in its state and counts it in
// that state. A message is in exactly the entries place gives it: the two
// ready keys (ready), a timer key (leased, delayed), a waiting key
// (waiting), and an expiry key when it has a TTL and is not leased.
func (t *tx) place(m *messageRecord, id uint64) error {
	q := &t.q
	switch m.state {
	case stateReady:
		if err := t.setReady(m, id); err != nil {
			return err
		}
	case stateLeased, stateDelayed:
		if err := set(t.w, t.k.lease(m.until, id), nil); err != nil {
			return err
		}
		if q.leased+q.delayed == 0 || m.until < q.leaseFloor {
			q.leaseFloor = m.until
		}
		if m.state == stateLeased {
			q.leased++
		} else {
			q.delayed++
		}
	case stateWaiting:
		if err := set(t.w, t.k.waiting(m.group, id), nil); err != nil {
			return err
		}
		q.waiting++
	}
	if m.state == stateLeased || m.expiresMs == 0 {
		return nil
	}
	if q.expiring == 0 || m.expiresMs < q.expiryFloor {
		q.expiryFloor = m.expiresMs
	}
	q.expiring++
	return set(t.w, t.k.expiry(m.expiresMs, id), nil)
}

// unplace removes what place added.
func (t *tx) unplace(m *messageRecord, id uint64) error {
	q := &t.q
	var err error
	switch m.state {
	case stateReady:
		err = t.deleteReady(m, id)
	case stateLeased:
		err = del(t.w, t.k.lease(m.until, id))
		q.leased--
	case stateDelayed:
		err = del(t.w, t.k.lease(m.until, id))
		q.delayed--
	case stateWaiting:
		err = del(t.w, t.k.waiting(m.group, id))
		q.waiting--
	}
	if err != nil || m.state == stateLeased || m.expiresMs == 0 {
		return err
	}
	q.expiring--
	return del(t.w, t.k.expiry(m.expiresMs, id))
}

// settle sets the state of a message that is neither leased nor waiting:
// delayed while its delivery time is ahead, else ready.
func (t *tx) settle(m *messageRecord) {
	m.state = stateReady
	if m.until > t.now() {
		m.state = stateDelayed
	} else {
		m.until = 0
	}
}

// enqueue stores a new message with id: active in its group when the group
// has none, else waiting behind it.
func (t *tx) enqueue(m *messageRecord, id uint64) error {
	t.settle(m)
	if m.group != "" {
		g, err := t.loadGroup(m.group)
		if err != nil {
			return err
		}
		if g.active == 0 {
			g.active = id
		} else {
			if g.waiting == 0 {
				g.floor = id
			}
			g.waiting++
			m.state = stateWaiting
		}
		if err := t.storeGroup(m.group, &g); err != nil {
			return err
		}
	}
	if err := t.place(m, id); err != nil {
		return err
	}
	t.q.messages++
	if m.origin != "" {
		t.q.deadHeld++
	}
	return t.put(m, id)
}

// removeMsg removes a message from the queue for good.
func (t *tx) removeMsg(m *messageRecord, id uint64) error {
	if err := t.unplace(m, id); err != nil {
		return err
	}
	return t.drop(m, id)
}

// drop removes an unplaced message's record and counts, and lets the next
// message of its group go when it was the active one.
func (t *tx) drop(m *messageRecord, id uint64) error {
	if err := del(t.w, t.k.msg(id)); err != nil {
		return err
	}
	q := &t.q
	q.messages--
	if m.origin != "" {
		q.deadHeld--
	}
	if id == q.msgFloor {
		q.msgFloor = id + 1
	}
	if m.group == "" {
		return nil
	}
	g, err := t.loadGroup(m.group)
	if err != nil {
		return err
	}
	switch {
	case g.active == id:
		err = t.activateNext(m.group, &g)
	case m.state == stateWaiting:
		g.waiting--
	}
	if err != nil {
		return err
	}
	return t.storeGroup(m.group, &g)
}

// activateNext makes the first waiting message of group g its active one.
func (t *tx) activateNext(group string, g *groupRecord) error {
	g.active = 0
	if g.waiting == 0 {
		return nil
	}
	p := t.k.waitingPrefix(group)
	var e firstEntry
	if err := t.w.Scan(appendID(p[:len(p):len(p)], g.floor), state.PrefixEnd(p), e.visit); err != nil || e.err != nil {
		return fmt.Errorf("queue: scan group %q of %q: %w%w", group, t.name, err, e.err)
	}
	if !e.found {
		return fmt.Errorf("queue: group %q of %q counts %d waiting and holds none", group, t.name, g.waiting)
	}
	m, err := t.mustLoad(e.id)
	if err != nil {
		return err
	}
	if err := t.unplace(&m, e.id); err != nil {
		return err
	}
	t.settle(&m)
	if err := t.place(&m, e.id); err != nil {
		return err
	}
	g.active, g.floor = e.id, e.id+1
	g.waiting--
	return t.put(&m, e.id)
}

// retire removes a message that died (reason is one of the reason
// constants) and sends it to the dead-letter queue, or drops it when the
// queue has none.
func (t *tx) retire(m *messageRecord, id uint64, reason string) error {
	if err := t.removeMsg(m, id); err != nil {
		return err
	}
	q := &t.q
	if reason == reasonExpired {
		q.expired++
	}
	if q.deadLetter == "" || q.deadLetter == t.name {
		q.dropped++
		return nil
	}
	q.deadOut++
	origin := m.origin
	if origin == "" {
		origin = t.name
	}
	dead := messageRecord{
		timeMs: m.timeMs, deliveries: m.deliveries, priority: m.priority, sender: m.sender, receiver: m.receiver,
		group: m.group, origin: origin, deadReason: reason, lastReason: m.lastReason, body: m.body,
	}
	return t.toOutbox(q.deadLetter, &dead)
}

// toOutbox adds an outbox entry moving m to queue target: str target, then
// the message record.
func (t *tx) toOutbox(target string, m *messageRecord) error {
	v := append(wire.AppendString(nil, target), m.encode()...)
	if err := set(t.w, t.k.outbox(t.q.outNext), v); err != nil {
		return err
	}
	t.q.outNext++
	return nil
}

// endLease ends the lease of a leased message: the message is
// dead-lettered when it has been delivered max_deliveries times or has
// expired, else it becomes ready again at its position (delayed by delayMs
// when > 0).
func (t *tx) endLease(m *messageRecord, id uint64, delayMs int64) error {
	switch {
	case t.q.maxDeliveries > 0 && m.deliveries >= t.q.maxDeliveries:
		return t.retire(m, id, reasonLimit)
	case m.expiresMs != 0 && m.expiresMs <= t.now():
		return t.retire(m, id, reasonExpired)
	}
	if err := t.unplace(m, id); err != nil {
		return err
	}
	m.holder, m.leaseIndex, m.until = "", 0, 0
	if delayMs > 0 {
		m.until = t.now() + delayMs
	}
	t.settle(m)
	if err := t.place(m, id); err != nil {
		return err
	}
	return t.put(m, id)
}

// maintain does the queue's timed work due at the command's time, at most
// MaxReapPerApply messages of each kind: lapsed leases end (endLease),
// delayed messages become ready, expired messages die. It reports whether
// it changed the record, which it does not store.
func (t *tx) maintain() (bool, error) {
	q, now := &t.q, t.now()
	changed := false
	if q.mayHaveLapsed(now) {
		ids, floor, err := dueTimers(t.w, t.k.lease(q.leaseFloor, 0), t.k, now)
		if err != nil {
			return false, err
		}
		q.leaseFloor, changed = floor, true // place lowers it for what it adds
		for _, id := range ids {
			if err := t.due(id); err != nil {
				return false, err
			}
		}
	}
	if q.mayExpire(now) {
		ids, floor, err := dueTimers(t.w, t.k.expiry(q.expiryFloor, 0), t.k, now+1)
		if err != nil {
			return false, err
		}
		q.expiryFloor, changed = floor, true
		for _, id := range ids {
			m, err := t.mustLoad(id)
			if err != nil {
				return false, err
			}
			if err := t.retire(&m, id, reasonExpired); err != nil {
				return false, err
			}
		}
	}
	return changed, nil
}

// due handles a message whose timer is due: a lapsed lease or a delay that
// ended.
func (t *tx) due(id uint64) error {
	m, err := t.mustLoad(id)
	if err != nil {
		return err
	}
	switch m.state {
	case stateLeased:
		return t.endLease(&m, id, 0)
	case stateDelayed:
		if err := t.unplace(&m, id); err != nil {
			return err
		}
		m.state, m.until = stateReady, 0
		if err := t.place(&m, id); err != nil {
			return err
		}
		return t.put(&m, id)
	}
	return fmt.Errorf("queue: timer of %q names message %d in state %d", t.name, id, m.state)
}

// mustLoad loads a message an index names.
func (t *tx) mustLoad(id uint64) (messageRecord, error) {
	m, ok, err := loadMessage(t.w, t.k, id)
	if err == nil && !ok {
		err = fmt.Errorf("queue: an index of %q names missing message %d", t.name, id)
	}
	return m, err
}

func (t *tx) loadGroup(g string) (groupRecord, error) {
	key := t.k.group(g)
	v, ok, err := t.w.Get(key)
	if err != nil || !ok {
		return groupRecord{}, err
	}
	return decodeGroupRecord(key, v)
}

// storeGroup stores a group's record, or deletes it when the group is
// empty.
func (t *tx) storeGroup(g string, r *groupRecord) error {
	if r.active == 0 && r.waiting == 0 {
		return del(t.w, t.k.group(g))
	}
	return set(t.w, t.k.group(g), r.encode())
}

func (t *tx) setReady(m *messageRecord, id uint64) error {
	a, b := t.k.readyKeys(m, id)
	if err := set(t.w, a, nil); err != nil {
		return err
	}
	if err := set(t.w, b, nil); err != nil {
		return err
	}
	return t.lowerFloors(a, b, positionOf(m, id))
}

func (t *tx) deleteReady(m *messageRecord, id uint64) error {
	a, b := t.k.readyKeys(m, id)
	if err := del(t.w, a); err != nil {
		return err
	}
	return del(t.w, b)
}

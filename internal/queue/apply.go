package queue

import (
	"fmt"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// StateMachine applies queue commands to one partition's state: everything
// it needs is in the command, the meta and the state. One made by
// NewStateMachine also keeps a memo of what its commands read by key
// (applyMemo), so it serves one partition only; the zero value keeps none.
// The key layout is in the package doc.
//
// Refusals (a missing queue, an existing one, a delete by someone else, an
// unknown receipt or lapsed lease, a full queue, a command that does not
// decode) are decided before anything is written, so they leave the state
// unchanged.
type StateMachine struct {
	memo  *applyMemo
	known *knownRanges // with memo: scan ranges whose every key it knows
}

var (
	_ state.Applier  = StateMachine{}
	_ state.Resetter = StateMachine{}
)

// NewStateMachine returns a StateMachine for one partition that remembers
// the queue records, floors and recent message records its commands read
// and write, instead of reading them from the state for every command.
func NewStateMachine() StateMachine {
	return StateMachine{memo: newApplyMemo(memoBudget), known: new(knownRanges)}
}

// Reset implements state.Resetter: it forgets what it remembered of the
// partition's state.
func (sm StateMachine) Reset() {
	if sm.memo != nil {
		sm.memo.Reset()
		sm.known.reset()
	}
}

// Apply implements state.Applier. Its result is decoded by the Service. An
// error means the state could not be read or written, or a stored record is
// corrupt.
func (sm StateMachine) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	c, err := DecodeCommand(cmd)
	if err != nil {
		return invalidResult(cmd, err), nil
	}
	if sm.memo != nil {
		w = memoWriter{w: w, m: sm.memo, k: sm.known}
	}
	if c, ok := c.(Create); ok {
		return applyCreate(w, meta, c)
	}
	name, op := c.queueName(), cmd[1]
	t, found, err := openQueue(w, meta, name)
	if err != nil {
		return nil, err
	}
	if !found {
		return notFound(op, name), nil
	}
	switch c := c.(type) {
	case Delete:
		return t.delete(c)
	case Send:
		return t.send(opSend, c.User, []Send{c})
	case SendBatch:
		return t.send(opBatch, c.User, c.Messages)
	case Receive:
		return t.receive(c)
	case Ack:
		return t.ack(c)
	case Nack:
		return t.nack(c)
	case Extend:
		return t.extend(c)
	case Configure:
		return t.configure(c)
	case Purge:
		return t.purge(c)
	case Redrive:
		return t.redrive(c)
	case Import:
		return t.importMessages(c)
	case OutDone:
		return t.outDone(c)
	case Tick:
		return t.tick()
	default:
		return invalidResult(cmd, fmt.Errorf("queue: unhandled command %T", c)), nil
	}
}

func notFound(op byte, queue string) []byte {
	return refusal(statusNotFound, op, "queue %q does not exist", queue)
}

// tx is one command's work on one queue: the queue's record as the command
// changes it, stored by store.
type tx struct {
	w    state.Writer
	meta state.Meta
	name string
	k    keys
	q    queueRecord
}

// openQueue loads a queue for a command.
func openQueue(w state.Writer, meta state.Meta, name string) (*tx, bool, error) {
	q, found, err := loadQueue(w, name)
	if err != nil || !found {
		return nil, found, err
	}
	return &tx{w: w, meta: meta, name: name, k: keysOf(name), q: q}, true, nil
}

func (t *tx) now() int64 { return t.meta.TimeMs }

// store stores the queue record, stamped with the command's index.
func (t *tx) store() error {
	t.q.version = t.meta.Index
	return storeQueue(t.w, &t.q)
}

// mayAdminister reports whether user may change the queue's settings,
// purge, redrive or delete it: its creator, or an admin.
func (t *tx) mayAdminister(user string, admin bool) bool {
	return admin || ident.EqualFold(t.q.creator, user)
}

func applyCreate(w state.Writer, meta state.Meta, c Create) ([]byte, error) {
	_, found, err := loadQueue(w, c.Queue)
	if err != nil {
		return nil, err
	}
	if found {
		return refusal(statusConflict, opCreate, "queue %q already exists", c.Queue), nil
	}
	q := queueRecord{
		nextID: 1, msgFloor: 1, createdMs: meta.TimeMs, lastMs: meta.TimeMs, version: meta.Index, incarnation: meta.Index,
		maxDeliveries: DefaultMaxDeliveries, creator: c.User, key: recordKey(c.Queue),
	}
	q.apply(c.Settings)
	if err := storeQueue(w, &q); err != nil {
		return nil, err
	}
	return createResult(meta.TimeMs), nil
}

// apply sets the settings u names.
func (q *queueRecord) apply(u SettingsUpdate) {
	set := u.over(q.settings())
	q.maxDeliveries, q.deadLetter, q.ttlMs, q.maxLength = set.MaxDeliveries, set.DeadLetter, set.TTLMs, set.MaxLength
	q.overflow = overflowReject
	if set.DropOldest {
		q.overflow = overflowDropOldest
	}
}

func (t *tx) delete(c Delete) ([]byte, error) {
	if !t.mayAdminister(c.User, c.Admin) {
		return refusal(statusForbidden, opDelete, "only the creator of queue %q or an admin may delete it", t.name), nil
	}
	if err := t.deleteUnder(func([]byte) bool { return true }); err != nil {
		return nil, err
	}
	if err := del(t.w, t.q.key); err != nil {
		return nil, err
	}
	return deleteResult(t.q.messages), nil
}

// deleteUnder deletes the keys under the queue's prefix for which doomed
// returns true (given the key after the prefix).
func (t *tx) deleteUnder(doomed func(rest []byte) bool) error {
	// Collect first: the Writer does not promise that a scan survives writes.
	var keys [][]byte
	lo := t.k.all()
	if err := t.w.Scan(lo, state.PrefixEnd(lo), func(k, _ []byte) bool {
		if doomed(k[len(lo):]) {
			keys = append(keys, append([]byte(nil), k...))
		}
		return true
	}); err != nil {
		return fmt.Errorf("queue: scan %q: %w", t.name, err)
	}
	for _, k := range keys {
		if err := del(t.w, k); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) tick() ([]byte, error) {
	changed, err := t.maintain()
	if err != nil {
		return nil, err
	}
	if changed {
		if err := t.store(); err != nil {
			return nil, err
		}
	}
	return okResult(opTick, 0), nil
}

// storeQueue stores a queue record read by loadQueue or made by Create.
// Nearly every command rewrites it: it is stored lazily.
func storeQueue(w state.Writer, q *queueRecord) error {
	return setLatest(w, q.key, q.encode())
}

// setLatest stores a record that the commands of a batch rewrite again and
// again (a queue's record, an index's floors) lazily (state.SetLatest): the
// batch writes its last value once.
func setLatest(w state.Writer, k, v []byte) error {
	if err := state.SetLatest(w, k, v); err != nil {
		return fmt.Errorf("queue: write %q: %w", k, err)
	}
	return nil
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

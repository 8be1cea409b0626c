package partition

import (
	"context"
	"fmt"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/presence"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/state"
)

// domain is one domain of a partition: its state machine and, for domains
// with waiters, what key a command touched (the domain's TouchedKey).
type domain struct {
	sm      state.Applier
	touched func(cmd []byte) (string, bool)
}

// domains is the state machine of every partition: one domain per command
// tag (the command's first byte).
var domains = map[byte]domain{
	kv.Tag:      {kv.StateMachine{}, kv.TouchedKey}, // each mux applies with its own
	account.Tag: {account.StateMachine{}, nil},
	chat.Tag:    {chat.StateMachine{}, chat.TouchedKey},
	queue.Tag:   {queue.StateMachine{}, queue.TouchedKey}, // each mux applies with its own
	link.Tag:    {link.StateMachine{}, nil},

	// Presence leases, outside every room's seq order.
	presence.Tag: {presence.StateMachine{}, nil},
}

// StateMachine returns the state machine of one partition, which also
// tells notes (nil: no one) about every applied command that touched a key.
// Recording a note has no effect on the replicated state, so Apply stays
// deterministic. Its kv and queue domains remember what their commands read
// (kv.NewStateMachine, queue.NewStateMachine), so each partition needs its
// own; the engine resets them whenever the partition's state is replaced
// (state.Resetter).
func StateMachine(notes *Notifier) state.Applier {
	return mux{notes: notes, kv: kv.NewStateMachine(), queue: queue.NewStateMachine()}
}

// mux dispatches a partition's commands to the domain named by their first
// byte; kv and queue commands go to the partition's own state machines.
type mux struct {
	notes *Notifier
	kv    kv.StateMachine
	queue queue.StateMachine
}

var _ state.Resetter = mux{}

// Reset implements state.Resetter.
func (m mux) Reset() {
	m.kv.Reset()
	m.queue.Reset()
}

// Apply implements state.Applier.
func (m mux) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	if len(cmd) == 0 {
		return nil, nil
	}
	d, ok := domains[cmd[0]]
	if !ok {
		// Every replica refuses an unknown domain alike; the result says so.
		return []byte(fmt.Sprintf("unknown command domain %q", cmd[0])), nil
	}
	switch cmd[0] {
	case kv.Tag:
		d.sm = m.kv
	case queue.Tag:
		d.sm = m.queue
	}
	res, err := d.sm.Apply(w, meta, cmd)
	if err == nil && m.notes != nil && d.touched != nil {
		if name, ok := d.touched(cmd); ok {
			m.notes.record(meta.Partition, Key{Domain: cmd[0], Name: name}, meta.Index)
		}
	}
	return res, err
}

// Queues returns n as the queue Service's Notifier, for queues routed to
// partitions by partitionOf.
func (n *Notifier) Queues(partitionOf func(queue string) uint64) queue.Notifier {
	return queueWaits{n: n, partitionOf: partitionOf}
}

type queueWaits struct {
	n           *Notifier
	partitionOf func(string) uint64
}

// Wait implements queue.Notifier.
func (q queueWaits) Wait(ctx context.Context, name string, afterIndex uint64) error {
	return q.n.Wait(ctx, q.partitionOf(name), Key{Domain: queue.Tag, Name: name}, afterIndex)
}

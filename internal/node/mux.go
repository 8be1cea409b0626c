package node

import (
	"fmt"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/presence"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/state"
)

// domainMux dispatches a partition's commands to the domain state machine
// named by the command's first byte.
type domainMux map[byte]state.Applier

// partitionMux is the state machine of every partition: one domain per tag.
var partitionMux = domainMux{
	kv.Tag:      kv.StateMachine{},
	account.Tag: account.StateMachine{},
	chat.Tag:    chat.StateMachine{},
	queue.Tag:   queue.StateMachine{},
	link.Tag:    link.StateMachine{},

	// Presence leases, outside every room's seq order.
	presence.Tag: presence.StateMachine{},
}

// Apply implements state.Applier.
func (d domainMux) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	if len(cmd) == 0 {
		return nil, nil
	}
	sm, ok := d[cmd[0]]
	if !ok {
		// Every replica refuses an unknown domain alike; the result says so.
		return []byte(fmt.Sprintf("unknown command domain %q", cmd[0])), nil
	}
	return sm.Apply(w, meta, cmd)
}

// notifyingMux is partitionMux for one node: it also tells the node's queue
// notifier about every applied command that may wake a long-polling
// receiver. The notifier learns the command's index here, on the driver
// goroutine, and wakes waiters only once the engine reports the batch
// durable and visible (queueNotifier.applied).
type notifyingMux struct {
	mux   domainMux
	notes *queueNotifier
	rooms *roomSignals // wakes room feeds (stream_signal.go)
}

var _ state.Applier = notifyingMux{}

// Apply implements state.Applier. Recording the note has no effect on the
// replicated state, so Apply stays deterministic.
func (m notifyingMux) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	res, err := m.mux.Apply(w, meta, cmd)
	if err == nil {
		if q, ok := queue.TouchedKey(cmd); ok {
			m.notes.record(meta.Partition, q, meta.Index)
		} else if room, ok := changedRoom(cmd); ok && m.rooms != nil {
			m.rooms.record(meta.Partition, room, meta.Index)
		}
	}
	return res, err
}

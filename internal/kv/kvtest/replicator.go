// Package kvtest provides an in-memory Replicator for tests of code built on
// kv.Service: every partition is a state.Mem, commands go through the real
// state machine and dedup keys are honoured, with no Raft underneath.
package kvtest

import (
	"context"
	"hash/fnv"
	"sync"

	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/state"
)

// Replicator is an in-memory kv.Replicator. It is safe for concurrent use.
type Replicator struct {
	// StaleMs is what Read reports for stale reads.
	StaleMs int64

	app   state.Applier
	mu    sync.Mutex
	parts map[uint64]*partition
	ids   []uint64
	err   error
	now   int64
}

// partition is one partition's state and dedup table.
type partition struct {
	mem     *state.Mem
	dedup   map[string][]byte
	applied uint64
}

var _ kv.Replicator = (*Replicator)(nil)

// NewReplicator returns a Replicator of n partitions (ids 1..n) that applies
// commands with app; a nil app means kv.StateMachine.
func NewReplicator(n int, app state.Applier) *Replicator {
	if app == nil {
		app = kv.StateMachine{}
	}
	r := &Replicator{app: app, parts: map[uint64]*partition{}}
	for i := 1; i <= n; i++ {
		id := uint64(i)
		r.ids = append(r.ids, id)
		r.parts[id] = &partition{mem: state.NewMem(), dedup: map[string][]byte{}}
	}
	return r
}

// SetErr makes every later Propose and Read fail with err (nil to heal).
func (r *Replicator) SetErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// Applied returns how many commands partition p has applied, dedup hits not
// counted.
func (r *Replicator) Applied(p uint64) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.parts[p].applied
}

// PartitionOf implements kv.Replicator with FNV-1a over the routing key.
func (r *Replicator) PartitionOf(routingKey string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(routingKey))
	return r.ids[h.Sum64()%uint64(len(r.ids))]
}

// Partitions implements kv.Replicator.
func (r *Replicator) Partitions() []uint64 { return append([]uint64(nil), r.ids...) }

// Propose implements kv.Replicator. Each command is stamped with a time one
// millisecond after the previous one.
func (r *Replicator) Propose(ctx context.Context, p uint64, dedupKey string, cmd []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	part := r.parts[p]
	if res, ok := part.dedup[dedupKey]; ok && dedupKey != "" {
		return res, nil
	}
	r.now++
	part.applied++
	res, err := r.app.Apply(part.mem, state.Meta{Partition: p, Index: part.applied, TimeMs: r.now}, cmd)
	if err != nil {
		return nil, err
	}
	if dedupKey != "" {
		part.dedup[dedupKey] = res
	}
	return res, nil
}

// Read implements kv.Replicator.
func (r *Replicator) Read(ctx context.Context, p uint64, stale bool, fn func(state.Reader) error) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	var staleMs int64
	if stale {
		staleMs = r.StaleMs
	}
	return staleMs, fn(r.parts[p].mem)
}

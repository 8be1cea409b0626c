// Package queuetest provides an in-memory Replicator and Notifier for tests
// of code built on queue.Service: every partition is a state.Mem, commands
// go through the real state machine and dedup keys are honoured, with no
// Raft underneath. Time is a settable clock shared by the leader stamps and
// the Service's reads, so tests decide when leases lapse.
package queuetest

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/state"
)

// Start is the clock's initial time.
var Start = time.UnixMilli(1_700_000_000_000)

// Replicator is an in-memory queue.Replicator and queue.Notifier. It is safe
// for concurrent use.
type Replicator struct {
	// StaleMs is what Read reports for stale reads.
	StaleMs int64

	mu      sync.Mutex
	parts   map[uint64]*partition
	ids     []uint64
	err     error
	nowMs   int64
	index   uint64            // Raft indexes, shared by all partitions for simplicity
	sent    map[string]uint64 // queue -> index of its last command TouchedKey reports
	wake    chan struct{}     // closed and replaced whenever sent changes
	reads   int
	propose int
}

// partition is one partition's state and dedup table.
type partition struct {
	mem     *state.Mem
	dedup   map[string][]byte
	applied uint64
	lastMs  int64
}

var (
	_ queue.Replicator = (*Replicator)(nil)
	_ queue.Notifier   = (*Replicator)(nil)
)

// NewReplicator returns a Replicator of n partitions (ids 1..n) applying
// queue.StateMachine, its clock at Start.
func NewReplicator(n int) *Replicator {
	r := &Replicator{
		parts: map[uint64]*partition{},
		nowMs: Start.UnixMilli(),
		sent:  map[string]uint64{},
		wake:  make(chan struct{}),
	}
	for i := 1; i <= n; i++ {
		id := uint64(i)
		r.ids = append(r.ids, id)
		r.parts[id] = &partition{mem: state.NewMem(), dedup: map[string][]byte{}}
	}
	return r
}

// Now returns the clock's time; give it to queue.Config.Now.
func (r *Replicator) Now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.UnixMilli(r.nowMs)
}

// Advance moves the clock forward by d.
func (r *Replicator) Advance(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nowMs += d.Milliseconds()
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

// Calls returns how many Propose and Read calls were made.
func (r *Replicator) Calls() (proposes, reads int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.propose, r.reads
}

// Keys returns partition p's state keys, in order.
func (r *Replicator) Keys(p uint64) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []string
	_ = r.parts[p].mem.Scan(nil, nil, func(k, _ []byte) bool {
		keys = append(keys, string(k))
		return true
	})
	return keys
}

// PartitionOf implements queue.Replicator with FNV-1a over the routing key.
func (r *Replicator) PartitionOf(routingKey string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(routingKey))
	return r.ids[h.Sum64()%uint64(len(r.ids))]
}

// Partitions implements queue.Replicator.
func (r *Replicator) Partitions() []uint64 { return append([]uint64(nil), r.ids...) }

// Propose implements queue.Replicator. Commands are stamped with the clock,
// kept non-decreasing per partition as the engine does.
func (r *Replicator) Propose(ctx context.Context, p uint64, dedupKey string, cmd []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.propose++
	if r.err != nil {
		return nil, r.err
	}
	part := r.parts[p]
	if res, ok := part.dedup[dedupKey]; ok && dedupKey != "" {
		return res, nil
	}
	r.index++
	part.applied++
	part.lastMs = max(part.lastMs, r.nowMs)
	res, err := queue.StateMachine{}.Apply(part.mem, state.Meta{Partition: p, Index: r.index, TimeMs: part.lastMs}, cmd)
	if err != nil {
		return nil, err
	}
	if dedupKey != "" {
		part.dedup[dedupKey] = res
	}
	if q, ok := queue.TouchedKey(cmd); ok {
		r.sent[q] = r.index
		close(r.wake)
		r.wake = make(chan struct{})
	}
	return res, nil
}

// Read implements queue.Replicator.
func (r *Replicator) Read(ctx context.Context, p uint64, stale bool, fn func(state.Reader) error) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if r.err != nil {
		return 0, r.err
	}
	var staleMs int64
	if stale {
		staleMs = r.StaleMs
	}
	return staleMs, fn(r.parts[p].mem)
}

// Wait implements queue.Notifier exactly: it returns once a Send or Delete
// on queue has been applied after afterIndex.
func (r *Replicator) Wait(ctx context.Context, q string, afterIndex uint64) error {
	for {
		r.mu.Lock()
		done, wake := r.sent[q] > afterIndex, r.wake
		r.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

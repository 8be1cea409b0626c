// Package statetest provides an in-memory state.Replicator for tests of the
// domain services and of code built on them: every partition is a
// state.Mem, commands go through the real state machine (any
// state.Applier) and dedup keys are honoured, with no Raft underneath.
package statetest

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/state"
)

// Start is a round instant for tests that Freeze the clock.
var Start = time.UnixMilli(1_700_000_000_000)

// Replicator is an in-memory state.Replicator. Its clock stamps the leader
// time of each command: it starts at the Unix epoch and moves one
// millisecond before each proposal, unless Freeze stopped it; stamps never
// go backwards within a partition, as the engine's do. It is safe for
// concurrent use.
type Replicator struct {
	// StaleMs is what Read reports for stale reads.
	StaleMs int64

	app     state.Applier
	mu      sync.Mutex
	parts   map[uint64]*partition
	ids     []uint64
	err     error
	nowMs   int64
	tickMs  int64
	index   uint64 // Raft indexes, shared by all partitions for simplicity
	reads   int
	propose int
	// Wait's notifications: the key each applied command wakes (notify),
	// the index of the last command per key, and a channel closed and
	// replaced whenever that changes.
	notify func(cmd []byte) (key string, ok bool)
	sent   map[string]uint64
	wake   chan struct{}
}

// partition is one partition's state and dedup table.
type partition struct {
	mem     *state.Mem
	dedup   map[string][]byte
	applied uint64
	lastMs  int64
}

var _ state.Replicator = (*Replicator)(nil)

// NewReplicator returns a Replicator of n partitions (ids 1..n) that applies
// commands with app.
func NewReplicator(n int, app state.Applier) *Replicator {
	r := &Replicator{app: app, parts: map[uint64]*partition{}, tickMs: 1, sent: map[string]uint64{}, wake: make(chan struct{})}
	for i := 1; i <= n; i++ {
		id := uint64(i)
		r.ids = append(r.ids, id)
		r.parts[id] = &partition{mem: state.NewMem(), dedup: map[string][]byte{}}
	}
	return r
}

// Freeze sets the clock to at and stops it moving by itself: from then on
// only Advance moves it, so a test decides when leases lapse.
func (r *Replicator) Freeze(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nowMs, r.tickMs = at.UnixMilli(), 0
}

// Now returns the clock's time; give it to a Service's Now so that it reads
// the time line the commands are stamped on.
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

// NotifyOn makes Wait report the commands for which key reports a key (such
// as queue.TouchedKey): Wait(ctx, k, i) returns once a command with key k
// has been applied at an index above i.
func (r *Replicator) NotifyOn(key func(cmd []byte) (string, bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notify = key
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

// PartitionOf implements state.Replicator with FNV-1a over the routing key.
func (r *Replicator) PartitionOf(routingKey string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(routingKey))
	return r.ids[h.Sum64()%uint64(len(r.ids))]
}

// Partitions implements state.Replicator.
func (r *Replicator) Partitions() []uint64 { return append([]uint64(nil), r.ids...) }

// Propose implements state.Replicator: a dedup hit returns the first result,
// anything else is applied at once.
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
	r.nowMs += r.tickMs
	r.index++
	part.applied++
	part.lastMs = max(part.lastMs, r.nowMs)
	res, err := r.app.Apply(part.mem, state.Meta{Partition: p, Index: r.index, TimeMs: part.lastMs}, cmd)
	if err != nil {
		return nil, err
	}
	if dedupKey != "" {
		part.dedup[dedupKey] = res
	}
	if r.notify != nil {
		if k, ok := r.notify(cmd); ok {
			r.sent[k] = r.index
			close(r.wake)
			r.wake = make(chan struct{})
		}
	}
	return res, nil
}

// Read implements state.Replicator.
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

// Wait blocks until a command for which the NotifyOn function reports key
// has been applied at an index above afterIndex, or ctx ends. It implements
// queue.Notifier exactly.
func (r *Replicator) Wait(ctx context.Context, key string, afterIndex uint64) error {
	for {
		r.mu.Lock()
		done, wake := r.sent[key] > afterIndex, r.wake
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

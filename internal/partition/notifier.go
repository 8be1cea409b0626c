package partition

import (
	"context"
	"hash/fnv"
	"sync"
	"time"
)

// Key names what an applied command touched, for its waiters: a domain (the
// command's tag) and a name within it (a room, a queue, a kv key).
type Key struct {
	Domain byte
	Name   string
}

// notifyBuckets is how many hash buckets of keys a partition keeps the
// latest visible index of, for Wait. Keys sharing a bucket may end each
// other's Wait early, which Wait's contract allows; the waiter reads, finds
// nothing for it and waits again.
const notifyBuckets = 64

// notifyRecheck is how often Wait checks that this node still holds a
// replica of its partition; when it no longer does, nothing will wake it.
const notifyRecheck = time.Second

// Notifier is the one apply notifier of a node: StateMachine records every
// applied command that touched a key of a domain (the domain's TouchedKey),
// on the engine's driver goroutine, and Applied — called when the engine
// reports a batch durable and visible to reads (multiraft.Config.OnApplied)
// — wakes the key's waiters. A waiter is therefore never woken before what
// woke it can be read, and takes its channel (Changed) or compares indexes
// (Wait) so that a change between its read and its wait is never missed.
//
// It sees only partitions with a replica on this node. A replica brought up
// to date by a snapshot applies no commands, so its waiters are not woken
// for what the snapshot carried: waiters re-read periodically (Wait returns
// within notifyRecheck when the replica went away; feeds re-read every
// streamRecheck). Memory is bounded: per partition notifyBuckets indexes,
// plus one channel per key with waiters, dropped with its last waiter.
type Notifier struct {
	hasReplica func(partition uint64) bool
	recheck    time.Duration // notifyRecheck; tests shorten it

	mu      sync.Mutex
	pending map[uint64][]note // partition -> applied, not yet reported visible
	// observers are called with every key of their domain that becomes
	// visible (Observe).
	observers map[byte]func(p uint64, name string)
	last      map[uint64]*[notifyBuckets]uint64
	waits     map[waitKey]*waiters
}

// note is one applied command that touched a key.
type note struct {
	key   Key
	index uint64
}

type waitKey struct {
	partition uint64
	key       Key
}

// waiters is the channel closed at a key's next visible touch, shared by
// its waiters.
type waiters struct {
	ch   chan struct{}
	refs int
}

// NewNotifier returns a notifier; hasReplica reports whether this node holds
// a replica of a partition (the engine may not exist yet when the notifier
// is made).
func NewNotifier(hasReplica func(partition uint64) bool) *Notifier {
	return &Notifier{
		hasReplica: hasReplica,
		recheck:    notifyRecheck,
		pending:    map[uint64][]note{},
		last:       map[uint64]*[notifyBuckets]uint64{},
		waits:      map[waitKey]*waiters{},
	}
}

func bucketOf(k Key) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte{k.Domain})
	_, _ = h.Write([]byte(k.Name))
	return int(h.Sum32() % notifyBuckets)
}

// record notes that partition p applied, at index, a command touching k. It
// runs on the driver goroutine, before the batch is durable.
func (n *Notifier) record(p uint64, k Key, index uint64) {
	n.mu.Lock()
	n.pending[p] = append(n.pending[p], note{key: k, index: index})
	n.mu.Unlock()
}

// Applied wakes the waiters of every key partition p's commands touched up
// to index applied: the engine reports those entries durable and visible to
// reads. It runs on the driver goroutine and does not block.
func (n *Notifier) Applied(p, applied uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	notes := n.pending[p]
	if len(notes) == 0 {
		return
	}
	last := n.lastOf(p)
	i := 0
	for ; i < len(notes) && notes[i].index <= applied; i++ {
		b := bucketOf(notes[i].key)
		last[b] = max(last[b], notes[i].index)
		if obs := n.observers[notes[i].key.Domain]; obs != nil {
			obs(p, notes[i].key.Name)
		}
		wk := waitKey{p, notes[i].key}
		if w := n.waits[wk]; w != nil {
			close(w.ch)
			delete(n.waits, wk)
		}
	}
	if i == len(notes) {
		delete(n.pending, p)
	} else {
		n.pending[p] = notes[i:]
	}
}

// Observe makes fn be called with every key of domain that partition p's
// applied commands touched, once it is visible to reads: the indexers of
// chat search (internal/search) follow every room so. fn runs on the
// engine's driver goroutine with n.mu held: it must not block nor call the
// notifier. Observe before the engine starts; a second Observe of a domain
// replaces the first.
func (n *Notifier) Observe(domain byte, fn func(p uint64, name string)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.observers == nil {
		n.observers = map[byte]func(uint64, string){}
	}
	n.observers[domain] = fn
}

// lastOf returns p's bucket indexes, creating them. n.mu is held.
func (n *Notifier) lastOf(p uint64) *[notifyBuckets]uint64 {
	l := n.last[p]
	if l == nil {
		l = new([notifyBuckets]uint64)
		n.last[p] = l
	}
	return l
}

// Changed returns a channel closed at k's next visible touch in partition p,
// and the function to call once done waiting on it (it lets the channel go
// when no one else waits). Take it before reading k's state: a change
// applied in between is then either in what was read or closes the channel.
func (n *Notifier) Changed(p uint64, k Key) (<-chan struct{}, func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.changedLocked(p, k)
}

func (n *Notifier) changedLocked(p uint64, k Key) (<-chan struct{}, func()) {
	wk := waitKey{p, k}
	w := n.waits[wk]
	if w == nil {
		w = &waiters{ch: make(chan struct{})}
		n.waits[wk] = w
	}
	w.refs++
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if w.refs--; w.refs == 0 && n.waits[wk] == w {
				delete(n.waits, wk)
			}
		})
	}
}

// Wait returns nil once a command touching k (or a key in the same bucket)
// became visible in partition p at an index above afterIndex — at once if
// that has happened — or within the recheck interval when this node holds
// no replica of p (any more) and so cannot tell; never at once for the same
// index. It returns ctx's error when ctx ends first.
func (n *Notifier) Wait(ctx context.Context, p uint64, k Key, afterIndex uint64) error {
	b := bucketOf(k)
	t := time.NewTimer(n.recheck)
	defer t.Stop()
	for {
		n.mu.Lock()
		if n.lastOf(p)[b] > afterIndex {
			n.mu.Unlock()
			return nil
		}
		ch, done := n.changedLocked(p, k)
		n.mu.Unlock()
		select {
		case <-ch:
			done()
		case <-t.C:
			done()
			if !n.hasReplica(p) {
				return nil
			}
			t.Reset(n.recheck)
		case <-ctx.Done():
			done()
			return ctx.Err()
		}
	}
}

package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"
)

// tableShards spreads a Table's keys over this many locks.
const tableShards = 16

// Table is an owner's state: a token bucket per (rate limit, key) and the
// slot counts of each holder per (concurrency limit, key). It is safe for
// concurrent use.
type Table struct {
	cfg    Config
	seed   maphash.Seed
	shards [tableShards]tableShard
}

type tableShard struct {
	mu      sync.Mutex
	buckets map[limitKey]*bucket
	slots   map[limitKey]*slotSet
}

// limitKey names one counter: a limit and the key it counts.
type limitKey struct{ limit, key string }

// bucket is a token bucket; last is when it was last refilled (Unix ns).
type bucket struct {
	tokens float64
	last   int64
}

// NewTable returns an empty Table for cfg.
func NewTable(cfg Config) *Table {
	t := &Table{cfg: cfg.withDefaults(), seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].buckets = map[limitKey]*bucket{}
		t.shards[i].slots = map[limitKey]*slotSet{}
	}
	return t
}

func (t *Table) shard(key string) *tableShard {
	return &t.shards[maphash.String(t.seed, key)%tableShards]
}

// perShard is how many keys of one kind a shard remembers.
func (t *Table) perShard() int { return max(t.cfg.MaxKeys/tableShards, 1) }

// Take takes up to n tokens (at least 1 is asked for) from the bucket of
// (limit, key) at now and returns how many it got. When it got none, wait
// is how long until one token is back. A limit that is off grants all n.
func (t *Table) Take(limit, key string, n int, now time.Time) (got int, wait time.Duration) {
	n = max(n, 1)
	r, on := t.cfg.rate(limit)
	if !on {
		return n, 0
	}
	ns := now.UnixNano()
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := t.refilled(sh, limitKey{limit, key}, r, ns)
	got = min(n, int(b.tokens))
	b.tokens -= float64(got)
	if got == 0 {
		wait = r.wait(1 - b.tokens)
	}
	return got, wait
}

// Known reports whether the bucket of (limit, key) exists, or the limit is
// off (then there is nothing to know).
func (t *Table) Known(limit, key string) bool {
	if _, on := t.cfg.rate(limit); !on {
		return true
	}
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := sh.buckets[limitKey{limit, key}]
	return ok
}

// Peek returns the tokens of (limit, key)'s bucket refilled to now, without
// taking any or creating the bucket; ok is false when there is none.
func (t *Table) Peek(limit, key string, now time.Time) (tokens float64, ok bool) {
	r, on := t.cfg.rate(limit)
	if !on {
		return 0, false
	}
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.buckets[limitKey{limit, key}]
	if b == nil {
		return 0, false
	}
	return r.refill(b.tokens, now.UnixNano()-b.last), true
}

// Seed lowers the bucket of (limit, key) to tokens at now, creating it if
// need be: what a new owner does with the bucket a former owner kept.
func (t *Table) Seed(limit, key string, tokens float64, now time.Time) {
	r, on := t.cfg.rate(limit)
	if !on {
		return
	}
	ns := now.UnixNano()
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := t.refilled(sh, limitKey{limit, key}, r, ns)
	b.tokens = min(b.tokens, max(tokens, 0))
}

// refilled returns the bucket of k in sh refilled to ns, a full one when
// there was none (sweeping the shard first when it is full). sh.mu is held.
func (t *Table) refilled(sh *tableShard, k limitKey, r Rate, ns int64) *bucket {
	b := sh.buckets[k]
	if b == nil {
		if len(sh.buckets) >= t.perShard() {
			t.sweepBuckets(sh, ns)
		}
		b = &bucket{tokens: float64(r.N), last: ns}
		sh.buckets[k] = b
	}
	b.tokens = r.refill(b.tokens, ns-b.last)
	b.last = max(b.last, ns)
	return b
}

// sweepBuckets forgets full buckets (they carry no information); when none
// is full it forgets them all, which errs towards allowing.
func (t *Table) sweepBuckets(sh *tableShard, ns int64) {
	for k, b := range sh.buckets {
		if r, on := t.cfg.rate(k.limit); !on || r.refill(b.tokens, ns-b.last) >= float64(r.N) {
			delete(sh.buckets, k)
		}
	}
	if len(sh.buckets) >= t.perShard() {
		clear(sh.buckets)
	}
}

// Hold records that holder uses n slots of (limit, key) from now until
// LeaseTTL later, and reports whether that is allowed: always when n does
// not grow the holder's live count, else only when every live holder's
// count together stays within the limit. seq orders one holder's messages:
// one older than the last accepted changes nothing and reports whether the
// recorded count covers n. n = 0 ends the holder's lease. A limit that is
// off allows everything and records nothing.
func (t *Table) Hold(limit, key, holder string, n int, seq uint64, now time.Time) bool {
	capN, on := t.cfg.slots(limit)
	if !on {
		return true
	}
	ns := now.UnixNano()
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	k := limitKey{limit, key}
	s := sh.slots[k]
	if s == nil {
		if n <= 0 {
			return true
		}
		if len(sh.slots) >= t.perShard() {
			t.sweepSlots(sh, ns)
		}
		s = &slotSet{}
		sh.slots[k] = s
	}
	ok := s.set(holder, max(n, 0), seq, ns, ns+int64(t.cfg.LeaseTTL), capN)
	if len(s.leases) == 0 {
		delete(sh.slots, k)
	}
	return ok
}

// Used returns the slots of (limit, key) held by live leases at now.
func (t *Table) Used(limit, key string, now time.Time) int {
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s := sh.slots[limitKey{limit, key}]; s != nil {
		return s.used(-1, now.UnixNano())
	}
	return 0
}

// sweepSlots forgets counters whose leases have all lapsed; when that
// frees nothing it forgets them all, which errs towards allowing.
func (t *Table) sweepSlots(sh *tableShard, ns int64) {
	for k, s := range sh.slots {
		if s.used(-1, ns) == 0 {
			delete(sh.slots, k)
		}
	}
	if len(sh.slots) >= t.perShard() {
		clear(sh.slots)
	}
}

package link

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Policy names which entry a full Cache evicts.
type Policy string

// Cache policies.
const (
	// LRU evicts the least recently used entry.
	LRU Policy = "lru"
	// LFU evicts the least frequently used entry; among equally used ones,
	// the least recently used.
	LFU Policy = "lfu"
	// FIFO evicts the entry inserted first; reads do not matter.
	FIFO Policy = "fifo"
)

// ParsePolicy returns the policy named s (lru, lfu or fifo).
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case LRU, LFU, FIFO:
		return p, nil
	}
	return "", fmt.Errorf("link: cache policy %q is not lru, lfu or fifo", s)
}

// CacheStats counts a Cache's lookups.
type CacheStats struct {
	Hits, Misses, Evictions uint64
	Len                     int
}

// Cache is a fixed-size map with an eviction policy and per-entry expiry. An
// expired entry is a miss but keeps its place (and, under LFU, its count)
// until it is evicted or Put again. It is safe for concurrent use.
//
// Entries sit in buckets of equal use count, ordered by count; within a
// bucket they are ordered by recency. LRU and FIFO keep every entry in one
// bucket (LRU moves an entry to the front on use, FIFO never does); LFU moves
// it to the bucket of the next count. Eviction takes the least recent entry
// of the lowest bucket. Get and Put are O(1) and allocate nothing once the
// cache is full.
//
// A hit that changes no order (any hit under FIFO, a hit of the newest
// entry under LRU: a link every visitor asks for) holds the lock only for
// reading, so that the callers of a hot key share it rather than queue on
// it.
type Cache[K comparable, V any] struct {
	// mu guards every field below but the counters: held for reading by a
	// Get that changes no order, for writing by everything else.
	mu       sync.RWMutex
	policy   Policy
	capacity int
	now      func() time.Time
	items    map[K]*cacheEntry[K, V]
	buckets  bucket[K, V]  // sentinel: buckets.next has the lowest count
	free     *bucket[K, V] // emptied buckets, for reuse
	// deletes counts Delete calls: a value read before a Delete is not
	// Put after it (PutUnlessDeleted).
	deletes   uint64
	evictions uint64

	hits, misses atomic.Uint64
}

type cacheEntry[K comparable, V any] struct {
	key        K
	val        V
	expiresNs  int64 // 0: never
	bucket     *bucket[K, V]
	prev, next *cacheEntry[K, V] // newer, older within the bucket
}

// bucket holds the entries used uses times, newest first.
type bucket[K comparable, V any] struct {
	uses       uint64
	head       cacheEntry[K, V] // sentinel: head.next is the newest, head.prev the oldest
	prev, next *bucket[K, V]
}

// NewCache returns a cache of at most capacity entries (at least 1) evicting
// by policy; now is the clock for expiry (time.Now when nil).
func NewCache[K comparable, V any](capacity int, policy Policy, now func() time.Time) (*Cache[K, V], error) {
	if _, err := ParsePolicy(string(policy)); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	capacity = max(capacity, 1)
	c := &Cache[K, V]{policy: policy, capacity: capacity, now: now, items: make(map[K]*cacheEntry[K, V], capacity)}
	c.buckets.next, c.buckets.prev = &c.buckets, &c.buckets
	return c, nil
}

// Get returns the value of key if it is cached and has not expired, and
// counts a hit or a miss. A hit is a use for LRU and LFU.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	return c.GetAt(key, c.now())
}

// GetAt is Get for a caller that has read the clock already: now is the
// time expiry is checked against.
func (c *Cache[K, V]) GetAt(key K, now time.Time) (V, bool) {
	c.mu.RLock()
	e, ok := c.lookup(key, now)
	if !ok || !c.reorders(e) {
		var val V
		if ok {
			val = e.val
		}
		c.mu.RUnlock()
		return val, ok
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	// Another call may have changed the entry between the two locks: look
	// again, without counting this look (the first one is counted).
	if e, ok = c.items[key]; !ok || e.expiredAt(now) {
		var zero V
		return zero, false
	}
	c.use(e)
	return e.val, true
}

// lookup returns the live entry of key and counts a hit or a miss; c.mu is
// held, for reading or writing.
func (c *Cache[K, V]) lookup(key K, now time.Time) (*cacheEntry[K, V], bool) {
	e, ok := c.items[key]
	if !ok || e.expiredAt(now) {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return e, true
}

// expiredAt reports whether e has expired at now.
func (e *cacheEntry[K, V]) expiredAt(now time.Time) bool {
	return e.expiresNs != 0 && now.UnixNano() >= e.expiresNs
}

// reorders reports whether a use of e changes the order of entries (use
// would move it); c.mu is held, for reading or writing.
func (c *Cache[K, V]) reorders(e *cacheEntry[K, V]) bool {
	switch c.policy {
	case LRU:
		return e.prev != &e.bucket.head // not the newest already
	case LFU:
		return true // every use moves it to the next count
	}
	return false
}

// Put stores val under key until expires (never when zero), evicting one
// entry by the policy when the cache is full. Putting a key already cached
// replaces its value and expiry and counts as a use for LRU and LFU; under
// FIFO the entry keeps its place.
func (c *Cache[K, V]) Put(key K, val V, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(key, val, expires)
}

// put is Put with c.mu held.
func (c *Cache[K, V]) put(key K, val V, expires time.Time) {
	var ns int64
	if !expires.IsZero() {
		ns = expires.UnixNano()
	}
	if e, ok := c.items[key]; ok {
		e.val, e.expiresNs = val, ns
		c.use(e)
		return
	}
	var e *cacheEntry[K, V]
	if len(c.items) >= c.capacity {
		e = c.buckets.next.head.prev // the oldest entry of the lowest bucket
		c.remove(e)
		c.evictions++
	} else {
		e = new(cacheEntry[K, V])
	}
	*e = cacheEntry[K, V]{key: key, val: val, expiresNs: ns}
	c.items[key] = e
	c.pushFront(c.bucketAfter(&c.buckets, 1), e)
}

// Deletes returns how many times Delete was called: a value read after it
// may be stored with PutUnlessDeleted.
func (c *Cache[K, V]) Deletes() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.deletes
}

// PutUnlessDeleted is Put, unless Delete was called since Deletes returned
// deletes: the value may then be older than the deletion, and is dropped.
// It reports whether val was stored.
func (c *Cache[K, V]) PutUnlessDeleted(key K, val V, expires time.Time, deletes uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deletes != deletes {
		return false
	}
	c.put(key, val, expires)
	return true
}

// Delete removes key; a missing key is not an error.
func (c *Cache[K, V]) Delete(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deletes++
	if e, ok := c.items[key]; ok {
		c.remove(e)
	}
}

// Stats returns the counters and the number of entries, expired ones
// included.
func (c *Cache[K, V]) Stats() CacheStats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions, Len: len(c.items)}
}

// Policy returns the eviction policy.
func (c *Cache[K, V]) Policy() Policy { return c.policy }

// use records a use of e under the policy.
func (c *Cache[K, V]) use(e *cacheEntry[K, V]) {
	b := e.bucket
	switch c.policy {
	case LRU:
		c.unlink(e)
		c.pushFront(b, e)
	case LFU:
		next := c.bucketAfter(b, b.uses+1)
		c.unlink(e)
		c.pushFront(next, e)
		c.dropIfEmpty(b)
	}
}

// bucketAfter returns the bucket of count uses right after b, making it when
// missing.
func (c *Cache[K, V]) bucketAfter(b *bucket[K, V], uses uint64) *bucket[K, V] {
	if b.next != &c.buckets && b.next.uses == uses {
		return b.next
	}
	nb := c.free
	if nb != nil {
		c.free = nb.next
	} else {
		nb = new(bucket[K, V])
	}
	nb.uses = uses
	nb.head.next, nb.head.prev = &nb.head, &nb.head
	nb.prev, nb.next = b, b.next
	b.next.prev = nb
	b.next = nb
	return nb
}

// dropIfEmpty unlinks b when it holds no entry and keeps it for reuse.
func (c *Cache[K, V]) dropIfEmpty(b *bucket[K, V]) {
	if b.head.next != &b.head {
		return
	}
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next = nil, c.free
	c.free = b
}

func (c *Cache[K, V]) pushFront(b *bucket[K, V], e *cacheEntry[K, V]) {
	e.bucket = b
	e.prev, e.next = &b.head, b.head.next
	b.head.next.prev = e
	b.head.next = e
}

func (c *Cache[K, V]) unlink(e *cacheEntry[K, V]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// remove takes e out of the cache.
func (c *Cache[K, V]) remove(e *cacheEntry[K, V]) {
	delete(c.items, e.key)
	b := e.bucket
	c.unlink(e)
	c.dropIfEmpty(b)
}

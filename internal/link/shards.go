package link

import (
	"hash/maphash"
	"time"
)

// Redirects of different codes take different locks: the resolver cache
// and the visit counter are split into shards by a hash of the code, each
// shard a small cache or counter of its own with its own mutex. A redirect
// takes one lock of each, held for a few map operations.

// maxShards bounds the shards of the resolver cache and the visit counter.
const maxShards = 16

// minShardSize is the fewest entries a shard is given: below it, fewer
// shards, so that a small cache keeps its policy exact (one shard).
const minShardSize = 64

// shardCount returns how many shards hold size entries: a power of two,
// at most maxShards, each shard with at least minShardSize entries, or 1.
func shardCount(size int) int {
	n := 1
	for n < maxShards && size/(2*n) >= minShardSize {
		n *= 2
	}
	return n
}

// shardOf returns the shard of key among n (a power of two).
func shardOf(seed maphash.Seed, key string, n int) int {
	if n == 1 {
		return 0
	}
	return int(maphash.String(seed, key) & uint64(n-1))
}

// shardedCache is the resolver cache: Caches of capacity/shards entries
// each, a code in the shard of its hash. Eviction is by policy within a
// shard.
type shardedCache[V any] struct {
	seed   maphash.Seed
	shards []*Cache[string, V]
}

// newShardedCache returns a cache of about capacity entries in all.
func newShardedCache[V any](capacity int, policy Policy, now func() time.Time) (*shardedCache[V], error) {
	n := shardCount(capacity)
	c := &shardedCache[V]{seed: maphash.MakeSeed(), shards: make([]*Cache[string, V], n)}
	for i := range c.shards {
		var err error
		if c.shards[i], err = NewCache[string, V]((capacity+n-1)/n, policy, now); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// shard returns the Cache holding key.
func (c *shardedCache[V]) shard(key string) *Cache[string, V] {
	return c.shards[shardOf(c.seed, key, len(c.shards))]
}

// Stats sums the shards' counters.
func (c *shardedCache[V]) Stats() CacheStats {
	var sum CacheStats
	for _, sh := range c.shards {
		s := sh.Stats()
		sum.Hits += s.Hits
		sum.Misses += s.Misses
		sum.Evictions += s.Evictions
		sum.Len += s.Len
	}
	return sum
}

// Get is the Get of key's shard.
func (c *shardedCache[V]) Get(key string) (V, bool) { return c.shard(key).Get(key) }

// Delete is the Delete of key's shard.
func (c *shardedCache[V]) Delete(key string) { c.shard(key).Delete(key) }

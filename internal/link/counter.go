package link

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// visitKey is one counter of visits kept in memory between flushes. Bots
// are counted per day only: their referrer, browser and OS are left empty.
type visitKey struct {
	code     string
	day      uint32
	referrer string // "" for direct visits
	browser  string
	system   string
	bot      bool
}

// visitCounter aggregates the visits a node serves until a flush takes
// them, in shards by code (shards.go) so that redirects of different links
// do not wait for each other. Its memory is bounded: past maxKeys distinct
// counters in all (maxKeys/shards in a shard), new visits lose their
// referrer, browser and OS (counted as OtherReferrers and FamilyOther),
// leaving one counter per link, day and kind.
type visitCounter struct {
	seed   maphash.Seed
	shards []visitShard
}

// visitShard counts the visits of the codes of one shard.
//
// A visit whose counter already exists (every visit of a link since the last
// flush after the first by the same kind of visitor) holds the lock only for
// reading and adds to the counter atomically, so that the visitors of a hot
// link share the lock rather than queue on it. Adding a counter, taking them
// and counting a link with a visit limit hold it for writing.
type visitShard struct {
	// mu guards the maps (not the counters pending points to, which are
	// atomic): held for reading to add to a counter, for writing to change
	// a map.
	mu      sync.RWMutex
	maxKeys int
	pending map[visitKey]*atomic.Uint64
	// unflushed counts, per link with max_visits, this node's visits that
	// the cached count of the link does not include yet.
	unflushed map[string]uint64
}

func newVisitCounter(maxKeys int) *visitCounter {
	n := shardCount(maxKeys)
	c := &visitCounter{seed: maphash.MakeSeed(), shards: make([]visitShard, n)}
	for i := range c.shards {
		c.shards[i] = visitShard{maxKeys: (maxKeys + n - 1) / n, pending: map[visitKey]*atomic.Uint64{}, unflushed: map[string]uint64{}}
	}
	return c
}

// shard returns the shard counting code's visits.
func (c *visitCounter) shard(code string) *visitShard {
	return &c.shards[shardOf(c.seed, code, len(c.shards))]
}

// count counts a visit of code by v on day, unless the link has a visit
// limit (room > 0 visits left by its cached count) that this node's
// unflushed visits have used up; it reports whether the visit was counted.
func (c *visitCounter) count(code string, v visitor, day uint32, room uint64) bool {
	return c.shard(code).count(code, v, day, room)
}

// count is visitCounter.count within the shard of code.
func (c *visitShard) count(code string, v visitor, day uint32, room uint64) bool {
	k := visitKey{code: code, day: day, bot: v.bot}
	if !v.bot {
		k.referrer, k.browser, k.system = v.referrer, v.browser, v.system
	}
	if room == 0 && c.add(k) {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if room != 0 {
		n, ok := c.unflushed[code]
		if n >= room {
			return false
		}
		if !ok {
			code = clone(code)
		}
		c.unflushed[code] = n + 1
	}
	if n, ok := c.pending[k]; ok {
		n.Add(1)
		return true
	}
	if len(c.pending) >= c.maxKeys && !v.bot {
		if k.referrer != "" {
			k.referrer = OtherReferrers
		}
		k.browser, k.system = FamilyOther, FamilyOther
		if n, ok := c.pending[k]; ok {
			n.Add(1)
			return true
		}
	}
	// The strings may point into a request's memory.
	k.code, k.referrer = clone(k.code), clone(k.referrer)
	c.pending[k] = newCount(1)
	return true
}

// add adds a visit to k's counter if it exists, holding the lock for
// reading only, and reports whether it did.
func (c *visitShard) add(k visitKey) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.pending[k]
	if ok {
		n.Add(1)
	}
	return ok
}

// newCount returns a counter holding n.
func newCount(n uint64) *atomic.Uint64 {
	var c atomic.Uint64
	c.Store(n)
	return &c
}

// take returns the counted visits and starts afresh; nil when there are
// none.
func (c *visitCounter) take() map[visitKey]uint64 {
	var all map[visitKey]uint64
	for i := range c.shards {
		p := c.shards[i].take()
		if all == nil {
			all = p
			continue
		}
		for k, n := range p {
			all[k] += n // keys of different shards differ: no sum happens
		}
	}
	return all
}

// take is visitCounter.take for one shard.
func (c *visitShard) take() map[visitKey]uint64 {
	c.mu.Lock()
	p := c.pending
	if len(p) == 0 {
		c.mu.Unlock()
		return nil
	}
	c.pending = make(map[visitKey]*atomic.Uint64, len(p))
	c.mu.Unlock()
	// No visit adds to p's counters any more: adding holds the lock.
	counts := make(map[visitKey]uint64, len(p))
	for k, n := range p {
		counts[k] = n.Load()
	}
	return counts
}

// restore puts back visits take returned that could not be flushed.
func (c *visitCounter) restore(p map[visitKey]uint64) {
	for k, n := range p {
		sh := c.shard(k.code)
		sh.mu.Lock()
		if m, ok := sh.pending[k]; ok {
			m.Add(n)
		} else {
			sh.pending[k] = newCount(n)
		}
		sh.mu.Unlock()
	}
}

// flushed notes that the visits counted in totals are applied, and returns
// the codes among them with a visit limit, whose cached counts are now
// stale.
func (c *visitCounter) flushed(totals []CodeHits) []string {
	var limited []string
	for _, t := range totals {
		if c.shard(t.Code).flushed(t) {
			limited = append(limited, t.Code)
		}
	}
	return limited
}

// flushed notes that the t.N visits of t.Code are applied, and reports
// whether the link has a visit limit.
func (c *visitShard) flushed(t CodeHits) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.unflushed[t.Code]
	if !ok {
		return false
	}
	if n <= t.N {
		delete(c.unflushed, t.Code)
	} else {
		c.unflushed[t.Code] = n - t.N
	}
	return true
}

package account

import (
	"sync"
	"sync/atomic"
	"time"
)

// cacheShards spreads a sessionCache over independently locked maps so
// concurrent Authenticate calls on many cores do not share one lock.
const cacheShards = 16

// sessionCache is a node-local cache of Authenticate's answers, keyed by token
// digest. An entry lives TTL from the start of the read that filled it, so an
// answer is never older than TTL: a session revoked by a Logout that returned
// at time t is refused on every node from t+TTL on. Unknown tokens are cached
// too (a token cannot become valid later: a new session always has a new
// random token). It holds at most maxEntries; when full it drops expired
// entries, then arbitrary ones. It is safe for concurrent use.
type sessionCache struct {
	ttl    time.Duration
	max    int
	shards [cacheShards]cacheShard
}

type cacheShard struct {
	mu        sync.RWMutex
	m         map[[TokenHashLen]byte]cachedSession
	lastSweep int64
	hits      atomic.Uint64
	misses    atomic.Uint64
	_         [64]byte // keep shards on separate cache lines
}

// cachedSession is one cached answer.
type cachedSession struct {
	username  string // registered name; "" when the token is unknown
	admin     bool
	expiresMs int64 // the session's own expiry
	untilNs   int64 // the entry's expiry, Unix ns
	// tokenID and scopes describe a personal API token; "" and nil for a
	// login session.
	tokenID string
	scopes  Scopes
}

// newSessionCache returns a cache whose entries live ttl and that holds at
// most maxEntries (at least one per shard).
func newSessionCache(ttl time.Duration, maxEntries int) *sessionCache {
	c := &sessionCache{ttl: ttl, max: max(maxEntries/cacheShards, 1)}
	for i := range c.shards {
		c.shards[i].m = make(map[[TokenHashLen]byte]cachedSession)
	}
	return c
}

func (c *sessionCache) shard(d [TokenHashLen]byte) *cacheShard { return &c.shards[d[0]%cacheShards] }

// get returns the live entry for digest d at now.
func (c *sessionCache) get(d [TokenHashLen]byte, now time.Time) (cachedSession, bool) {
	sh := c.shard(d)
	sh.mu.RLock()
	e, ok := sh.m[d]
	sh.mu.RUnlock()
	hit := ok && now.UnixNano() < e.untilNs
	if hit {
		sh.hits.Add(1)
	} else {
		sh.misses.Add(1)
	}
	return e, hit
}

// put stores e for digest d; readStart is when the read that produced it
// began.
func (c *sessionCache) put(d [TokenHashLen]byte, e cachedSession, readStart time.Time) {
	start := readStart.UnixNano()
	e.untilNs = start + int64(c.ttl)
	sh := c.shard(d)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.m[d]; !ok && len(sh.m) >= c.max {
		if start-sh.lastSweep >= int64(c.ttl) {
			sh.lastSweep = start
			for k, v := range sh.m {
				if v.untilNs <= start {
					delete(sh.m, k)
				}
			}
		}
		for k := range sh.m {
			if len(sh.m) < c.max {
				break
			}
			delete(sh.m, k)
		}
	}
	sh.m[d] = e
}

// forget drops the entry for digest d.
func (c *sessionCache) forget(d [TokenHashLen]byte) {
	sh := c.shard(d)
	sh.mu.Lock()
	delete(sh.m, d)
	sh.mu.Unlock()
}

// stats returns how many lookups found a live entry and how many did not.
func (c *sessionCache) stats() (hits, misses uint64) {
	for i := range c.shards {
		hits += c.shards[i].hits.Load()
		misses += c.shards[i].misses.Load()
	}
	return hits, misses
}

// len returns the number of entries, live or expired.
func (c *sessionCache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}

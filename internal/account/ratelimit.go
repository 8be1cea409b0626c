package account

import (
	"sync"
	"time"
)

// maxLimiterAddrs bounds the addresses a limiter tracks; past it, buckets that
// have refilled are forgotten (they carry no information).
const maxLimiterAddrs = 1 << 16

// limiter is a token bucket per client address: perMinute attempts a minute,
// in bursts of up to perMinute. It is safe for concurrent use.
type limiter struct {
	perMinute float64
	mu        sync.Mutex
	buckets   map[string]*bucket
}

type bucket struct {
	tokens float64
	lastNs int64
}

func newLimiter(perMinute int) *limiter {
	return &limiter{perMinute: float64(perMinute), buckets: map[string]*bucket{}}
}

// allow takes one token from addr's bucket at now and reports whether there
// was one.
func (l *limiter) allow(addr string, now time.Time) bool {
	ns := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[addr]
	if !ok {
		if len(l.buckets) >= maxLimiterAddrs {
			l.sweep(ns)
		}
		b = &bucket{tokens: l.perMinute, lastNs: ns}
		l.buckets[addr] = b
	}
	b.tokens = l.refilled(b, ns)
	b.lastNs = ns
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (l *limiter) refilled(b *bucket, ns int64) float64 {
	elapsed := float64(max(ns-b.lastNs, 0)) / float64(time.Minute)
	return min(b.tokens+elapsed*l.perMinute, l.perMinute)
}

// sweep forgets full buckets; when none is full it forgets them all, which
// errs towards allowing.
func (l *limiter) sweep(ns int64) {
	for addr, b := range l.buckets {
		if l.refilled(b, ns) >= l.perMinute {
			delete(l.buckets, addr)
		}
	}
	if len(l.buckets) >= maxLimiterAddrs {
		clear(l.buckets)
	}
}

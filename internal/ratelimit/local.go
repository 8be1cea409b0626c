package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Local enforces a Config within one process: this process is the owner of
// every key. It serves single-process tests and shows the contract the
// node's cluster-wide limiter keeps: Take and Hold return nil or an
// errs.RateLimited error whose cause is an *Exceeded. It is safe for
// concurrent use.
type Local struct {
	cfg   Config
	table *Table
	now   func() time.Time
	mu    sync.Mutex
	seq   uint64
	used  map[limitKey]int
}

// NewLocal returns a Local limiter for cfg reading the clock now (nil:
// time.Now). Its slots need no renewal: cfg.LeaseTTL is ignored.
func NewLocal(cfg Config, now func() time.Time) *Local {
	if now == nil {
		now = time.Now
	}
	cfg.LeaseTTL = localLease
	return &Local{cfg: cfg.withDefaults(), table: NewTable(cfg), now: now, used: map[limitKey]int{}}
}

// Local's slots: one holder whose leases never lapse in practice.
const (
	localHolder = "local"
	localLease  = 100 * 365 * 24 * time.Hour
)

// Take takes one token of limit for key, or refuses.
func (l *Local) Take(_ context.Context, limit, key string) error {
	if got, wait := l.table.Take(limit, key, 1, l.now()); got == 0 {
		return Refusal(limit, l.cfg.Rates[limit], wait)
	}
	return nil
}

// Hold takes one slot of limit for key until release is called (once; later
// calls do nothing), or refuses.
func (l *Local) Hold(_ context.Context, limit, key string) (release func(), err error) {
	k := limitKey{limit, key}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	if !l.table.Hold(limit, key, localHolder, l.used[k]+1, l.seq, l.now()) {
		return nil, Refusal(limit, l.cfg.Slots[limit], time.Second)
	}
	l.used[k]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.used[k]--
			l.seq++
			l.table.Hold(limit, key, localHolder, l.used[k], l.seq, l.now())
			if l.used[k] == 0 {
				delete(l.used, k)
			}
		})
	}, nil
}

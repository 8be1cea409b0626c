package ratelimit

import (
	"sync"
	"time"
)

// StashTTL is how long a node keeps tokens it took ahead of need; unspent
// ones lapse (they are lost to the key, which errs towards refusing a
// little, never towards allowing more).
const StashTTL = time.Second

// Stash is a requesting node's tokens taken from owners ahead of need, and
// the owners' last refusals, per (limit, key). It is safe for concurrent
// use.
type Stash struct {
	cfg Config
	mu  sync.Mutex
	m   map[limitKey]*stashed
}

// stashed is what a node holds of one (limit, key); times are Unix ns.
type stashed struct {
	tokens  int
	expires int64 // the tokens lapse then
	denied  int64 // the owner refused; refuse locally until then
	batch   int   // tokens the next request asks for
	filled  int64 // when the last request was answered
}

// NewStash returns an empty Stash for cfg.
func NewStash(cfg Config) *Stash {
	return &Stash{cfg: cfg.withDefaults(), m: map[limitKey]*stashed{}}
}

// Spend takes one stashed token of (limit, key) at now and reports whether
// there was one. When there was none, wait > 0 means the owner refused
// less than its hint ago, so the caller should refuse at once and ask
// nobody; otherwise want is how many tokens to ask the owner for.
func (s *Stash) Spend(limit, key string, now time.Time) (ok bool, wait time.Duration, want int) {
	ns := now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[limitKey{limit, key}]
	if e == nil {
		return false, 0, 1
	}
	if ns < e.denied {
		return false, time.Duration(e.denied - ns), 0
	}
	if e.tokens > 0 && ns < e.expires {
		e.tokens--
		return true, 0, 0
	}
	e.tokens = 0
	return false, 0, e.batch
}

// Fill records the owner's answer to a request for want tokens: got were
// granted, of which the caller spends one at once; when got is 0, wait is
// the owner's hint of when a token is back. The next batch doubles (up to
// a sixteenth of the burst) while the key keeps running dry within
// StashTTL, and falls back to one when it does not.
func (s *Stash) Fill(limit, key string, want, got int, wait time.Duration, now time.Time) {
	ns := now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	k := limitKey{limit, key}
	e := s.m[k]
	if e == nil {
		if len(s.m) >= s.cfg.MaxKeys {
			s.sweep(ns)
		}
		e = &stashed{batch: 1}
		s.m[k] = e
	}
	if got <= 0 {
		e.tokens, e.batch, e.denied = 0, 1, ns+int64(wait)
		return
	}
	if ns >= e.expires {
		e.tokens = 0
	}
	e.tokens += got - 1
	e.expires = ns + int64(StashTTL)
	if got >= want && ns-e.filled < int64(StashTTL) {
		e.batch = min(e.batch*2, s.cfg.batchCap(limit))
	} else if ns-e.filled >= int64(StashTTL) {
		e.batch = 1
	}
	e.filled = ns
}

// sweep forgets entries with neither live tokens nor a live refusal; when
// that frees nothing it forgets them all.
func (s *Stash) sweep(ns int64) {
	for k, e := range s.m {
		if ns >= e.expires && ns >= e.denied {
			delete(s.m, k)
		}
	}
	if len(s.m) >= s.cfg.MaxKeys {
		clear(s.m)
	}
}

package link

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// Redirect is what GET /s/{code} answers: a redirect to URL with Status
// when State is StateActive, otherwise why the link does not redirect
// (StateDisabled, StateExpired or StateExhausted), with URL empty.
type Redirect struct {
	URL    string
	Status int
	State  string
}

// target is a link as the resolver cache keeps it: what a redirect needs.
type target struct {
	url  string
	hits uint64
	settings
}

// Resolve answers GET /s/{code}: where it redirects, or why not, counting
// the visit (in memory, flushed later) when it redirects. It answers from
// the node-local cache when it can; on a miss it reads the local replica
// (stale) and, when that replica lacks the code or is more than MaxStale
// behind, reads linearizably, so a link works the moment it is created on
// every node. Unknown codes are never cached. No redirect costs a Raft
// round.
//
// Staleness bound: a cached link is served until CacheTTL (at most 2 s)
// after the state it was read from, so a link deleted, disabled or edited
// through another node changes here at most CacheTTL after the change
// committed (plus the error in the replica's own staleness estimate), well
// within the 5 s the product promises; through this node it changes at
// once. Expiry is checked on every redirect against this node's clock.
//
// max_visits is enforced approximately (see the package doc): the visits
// of the cached read plus this node's visits not yet reflected in it.
//
// code and v may point into a request's memory, valid only during the call
// (the links listener passes its request buffer's bytes): whatever Resolve
// keeps of them (the cache's key, the visit counter's keys, the user
// agent's memo) it copies.
func (s *Service) Resolve(ctx context.Context, code string, v Visit) (Redirect, error) {
	if !ValidCode(code) {
		return Redirect{}, errs.New(errs.NotFound, "link not found")
	}
	now := s.cfg.Now()
	t, ok := s.cache.shard(code).GetAt(code, now)
	if !ok {
		var err error
		if t, err = s.load(ctx, code); err != nil {
			return Redirect{}, err
		}
	}
	if st := stateOf(&t.settings, t.hits, now.UnixMilli()); st != StateActive {
		return Redirect{State: st}, nil
	}
	var room uint64 // visits left under max_visits by the cached count; 0: no limit
	if t.maxVisits != 0 {
		room = t.maxVisits - t.hits
	}
	if !s.visits.count(code, s.agents.classify(v), dayOf(now), room) {
		return Redirect{State: StateExhausted}, nil
	}
	return Redirect{URL: t.url, Status: int(t.status), State: StateActive}, nil
}

// load reads the link with code for the cache and caches it.
//
// A Delete of the code's shard while it reads (an update or deletion
// through this node, or a flush of its counted visits) leaves the cache
// as it is: what was read may predate the change.
func (s *Service) load(ctx context.Context, code string) (target, error) {
	p := s.r.PartitionOf(code)
	shard := s.cache.shard(code)
	deletes := shard.Deletes()
	start := s.cfg.Now()
	t, found, staleMs, err := s.read(ctx, p, code, true)
	if err != nil || !found || time.Duration(staleMs)*time.Millisecond > s.cfg.MaxStale {
		start = s.cfg.Now()
		t, found, staleMs, err = s.read(ctx, p, code, false)
		if err != nil {
			return target{}, fmt.Errorf("link: resolve %q: %w", code, err)
		}
	}
	if !found {
		return target{}, errs.New(errs.NotFound, "link not found")
	}
	shard.PutUnlessDeleted(clone(code), t, start.Add(s.cfg.CacheTTL-time.Duration(max(staleMs, 0))*time.Millisecond), deletes)
	return t, nil
}

func (s *Service) read(ctx context.Context, p uint64, code string, stale bool) (t target, found bool, staleMs int64, err error) {
	staleMs, err = s.r.Read(ctx, p, stale, func(r state.Reader) error {
		rec, ok, err := r.Get(linkKey(code))
		if err != nil || !ok {
			return err
		}
		rc, err := decodeRecord(rec)
		if err != nil {
			return err
		}
		rc.tags = nil // not needed to redirect
		t, found = target{url: rc.url, hits: rc.hits, settings: rc.settings}, true
		return nil
	})
	return t, found, staleMs, err
}

// CacheStats returns the resolver cache's counters.
func (s *Service) CacheStats() CacheStats { return s.cache.Stats() }

// dayOf returns the day of t in days since 1970-01-01 UTC.
func dayOf(t time.Time) uint32 {
	return uint32(t.Unix() / 86400)
}

// Day returns the start (UTC) of a day numbered as DayVisits.Day.
func Day(day uint32) time.Time {
	return time.Unix(int64(day)*86400, 0).UTC()
}

// clone copies a string that may point into a request's memory.
func clone(s string) string { return strings.Clone(s) }

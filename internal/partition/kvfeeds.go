package partition

import (
	"context"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/state"
)

// KV watch tuning.
const (
	// kvRing is how many recent revisions a partition's feed keeps in
	// memory for the watchers that are live.
	kvRing = 1024
	// kvRingBytes bounds the values a partition's ring holds.
	kvRingBytes = 16 << 20
	// kvPage is how many events one read of a feed or a catch-up takes.
	kvPage = 512
	// kvPoll is how often a feed without a local replica re-reads a
	// replica node; kvRecheck how often any watcher re-reads unprompted.
	kvPoll    = 100 * time.Millisecond
	kvRecheck = time.Second
)

// KVFeeds is the node's side of kv watches. Each partition with watchers
// here has one feed: it reads the partition's new revisions once (every
// key), keeps the last kvRing of them in memory and wakes the watchers,
// which take what they select from the ring. A watcher behind the ring
// (resuming from an older revision) reads the partition's watch log itself
// until it reaches the ring. The feed of a partition with a replica here is
// woken by the Notifier; without one it polls a replica node every kvPoll.
type KVFeeds struct {
	ctx   context.Context
	r     *Router
	notes *Notifier

	mu     sync.Mutex
	parts  map[uint64]*kvFeed
	gen    chan struct{} // closed and replaced when any feed advances
	closed bool
	wg     sync.WaitGroup
}

// kvFeed is one partition's feed.
type kvFeed struct {
	refs   int
	cancel context.CancelFunc

	mu    sync.Mutex
	known bool
	from  uint64     // the ring holds the revisions (from, pos]
	pos   uint64     // every revision up to pos was read
	ring  []kv.Event // in revision order
	bytes int
}

// NewKVFeeds returns the kv watch feeds of the node r routes for; they run
// until ctx ends.
func NewKVFeeds(ctx context.Context, r *Router, notes *Notifier) *KVFeeds {
	return &KVFeeds{ctx: ctx, r: r, notes: notes, parts: map[uint64]*kvFeed{}, gen: make(chan struct{})}
}

// Close stops every feed (their watchers end with ctx); a watch started
// later gets feeds that never advance.
func (f *KVFeeds) Close() {
	f.mu.Lock()
	f.closed = true
	for _, pf := range f.parts {
		pf.cancel()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// generation returns the channel closed at the next advance of any feed.
func (f *KVFeeds) generation() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen
}

func (f *KVFeeds) advanced() {
	f.mu.Lock()
	close(f.gen)
	f.gen = make(chan struct{})
	f.mu.Unlock()
}

// acquire returns partition p's feed, starting it for its first watcher.
func (f *KVFeeds) acquire(p uint64) *kvFeed {
	f.mu.Lock()
	defer f.mu.Unlock()
	pf := f.parts[p]
	if f.closed {
		return &kvFeed{cancel: func() {}}
	}
	if pf == nil {
		ctx, cancel := context.WithCancel(f.ctx)
		pf = &kvFeed{cancel: cancel}
		f.parts[p] = pf
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.run(ctx, p, pf)
		}()
	}
	pf.refs++
	return pf
}

// release lets p's feed go when its last watcher leaves.
func (f *KVFeeds) release(p uint64, pf *kvFeed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pf.refs--; pf.refs == 0 && f.parts[p] == pf {
		pf.cancel()
		delete(f.parts, p)
	}
}

// run reads partition p's new revisions into pf until ctx ends.
func (f *KVFeeds) run(ctx context.Context, p uint64, pf *kvFeed) {
	for attempt := 0; ctx.Err() == nil; {
		local := f.r.d.Engine.HasGroup(p)
		var changed <-chan struct{}
		done := func() {}
		if local {
			changed, done = f.notes.Changed(p, Key{Domain: kv.Tag, Name: kv.WatchName})
		}
		more, err := f.readOnce(ctx, p, pf, local)
		if err != nil {
			done()
			attempt++
			if !sleepBackoff(ctx, attempt) {
				return
			}
			continue
		}
		attempt = 0
		if more {
			done()
			continue
		}
		wait := kvRecheck
		if !local {
			wait = kvPoll
		}
		t := time.NewTimer(wait)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		done()
	}
}

// readOnce reads one page of p's revisions after the feed's position (its
// first read only learns the position) and reports whether there may be
// more.
func (f *KVFeeds) readOnce(ctx context.Context, p uint64, pf *kvFeed, local bool) (bool, error) {
	pf.mu.Lock()
	known, pos := pf.known, pf.pos
	pf.mu.Unlock()
	var events []kv.Event
	var upTo uint64
	var readErr error
	read := func(r state.Reader) error {
		if !known {
			upTo, readErr = kv.Revision(r)
			return readErr
		}
		events, upTo, readErr = kv.EventsAfter(r, pos, kv.Match{}, kvPage)
		if errs.Is(readErr, errs.HistoryCompacted) {
			upTo, readErr = kv.Revision(r) // fell behind: jump; watchers behind find out themselves
			pos = upTo
		}
		return readErr
	}
	var err error
	if local {
		var fnErr error
		if _, fnErr, err = f.r.ReadLocal(ctx, p, false, read); err == nil {
			err = fnErr
		}
	} else {
		_, err = f.r.Read(ctx, p, true, read)
	}
	if err != nil {
		return false, err
	}
	pf.take(known, pos, events, upTo)
	if upTo > pos || !known {
		f.advanced()
	}
	return len(events) >= kvPage, nil
}

// take adds a read's events (the revisions (pos, upTo]) to the ring.
func (pf *kvFeed) take(known bool, pos uint64, events []kv.Event, upTo uint64) {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if !known || pos != pf.pos || !pf.known {
		pf.known, pf.from, pf.pos, pf.ring, pf.bytes = true, upTo, upTo, nil, 0
		return
	}
	if upTo <= pf.pos {
		return
	}
	pf.ring = append(pf.ring, events...)
	for _, e := range events {
		pf.bytes += len(e.Value) + len(e.Key)
	}
	pf.pos = upTo
	for len(pf.ring) > 0 && (pf.pos-pf.from > kvRing || pf.bytes > kvRingBytes) {
		rev := pf.ring[0].Revision
		for len(pf.ring) > 0 && pf.ring[0].Revision == rev {
			pf.bytes -= len(pf.ring[0].Value) + len(pf.ring[0].Key)
			pf.ring = pf.ring[1:]
		}
		pf.from = rev
	}
	if len(pf.ring) == 0 {
		pf.from = pf.pos
	}
}

// since returns the ring's events after revision after that m selects and
// the ring's position; ok is false when the ring does not reach back to
// after (or the feed has no position yet).
func (pf *kvFeed) since(after uint64, m kv.Match) (events []kv.Event, upTo uint64, ok bool) {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if !pf.known || after < pf.from {
		return nil, 0, false
	}
	if after >= pf.pos {
		return nil, after, true
	}
	for _, e := range pf.ring {
		if e.Revision > after && m.Matches(e.Key) {
			events = append(events, e)
		}
	}
	return events, pf.pos, true
}

// position returns the feed's position once it has one.
func (pf *kvFeed) position() (uint64, bool) {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	return pf.pos, pf.known
}

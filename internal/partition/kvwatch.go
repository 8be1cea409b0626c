package partition

import (
	"context"
	"maps"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/state"
)

// Watch follows the keys m selects in partitions parts, from the revisions
// in from (a partition missing from it starts at its current revision, read
// linearizably), until ctx ends, w fails, or an event needed was compacted
// away (errs.HistoryCompacted). Per partition, events come in revision
// order, each once, none skipped, whole revisions at a time.
func (f *KVFeeds) Watch(ctx context.Context, parts []uint64, m kv.Match, from map[uint64]uint64, w kv.Watcher) error {
	pos := make(map[uint64]uint64, len(parts))
	for _, p := range parts {
		if at, ok := from[p]; ok {
			pos[p] = at
			continue
		}
		var rev uint64
		if _, err := f.r.Read(ctx, p, false, func(r state.Reader) error {
			var err error
			rev, err = kv.Revision(r)
			return err
		}); err != nil {
			return err
		}
		pos[p] = rev
	}
	feeds := make(map[uint64]*kvFeed, len(parts))
	for _, p := range parts {
		feeds[p] = f.acquire(p)
	}
	defer func() {
		for p, pf := range feeds {
			f.release(p, pf)
		}
	}()
	if err := w.Ready(maps.Clone(pos)); err != nil {
		return err
	}
	recheck := time.NewTicker(kvRecheck)
	defer recheck.Stop()
	for {
		gen := f.generation()
		for _, p := range parts {
			if err := f.catchUp(ctx, p, feeds[p], m, pos, w); err != nil {
				return err
			}
		}
		select {
		case <-gen:
		case <-recheck.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// catchUp hands w partition p's events after pos[p] up to the feed's
// position: from the ring when it reaches back, else read from a replica.
func (f *KVFeeds) catchUp(ctx context.Context, p uint64, pf *kvFeed, m kv.Match, pos map[uint64]uint64, w kv.Watcher) error {
	for attempt := 0; ; {
		events, upTo, ok := pf.since(pos[p], m)
		if !ok {
			var err error
			events, upTo, err = f.readEvents(ctx, p, pos[p], m)
			if errs.Is(err, errs.HistoryCompacted) {
				return err
			}
			if err != nil {
				attempt++
				if !sleepBackoff(ctx, attempt) {
					return ctx.Err()
				}
				continue
			}
			if feedPos, known := pf.position(); upTo == pos[p] && known && feedPos > upTo {
				// The replica read lags the feed: try again shortly.
				attempt++
				if !sleepBackoff(ctx, attempt) {
					return ctx.Err()
				}
				continue
			}
		}
		if upTo <= pos[p] {
			return nil
		}
		pos[p] = upTo
		if len(events) > 0 {
			if err := w.Events(p, events, maps.Clone(pos)); err != nil {
				return err
			}
		}
	}
}

// readEvents reads p's events after after that m selects, from this node's
// replica when it has one, else from a replica node (stale: events are
// immutable once applied; a lagging replica returns fewer).
func (f *KVFeeds) readEvents(ctx context.Context, p, after uint64, m kv.Match) ([]kv.Event, uint64, error) {
	var events []kv.Event
	var upTo uint64
	_, err := f.r.Read(ctx, p, true, func(r state.Reader) error {
		var err error
		events, upTo, err = kv.EventsAfter(r, after, m, kvPage)
		return err
	})
	return events, upTo, err
}

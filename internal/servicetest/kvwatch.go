package servicetest

import (
	"context"
	"maps"
	"time"

	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// kvPoll is how often a KVWatch re-reads its partitions.
const kvPoll = 5 * time.Millisecond

// KVWatch is an api.KVWatchService over a kv Service on an in-memory
// replicator: it reads each partition's watch log every few milliseconds
// (the node's watches are woken by its apply notifier instead), with the
// same plan, token and event reads as the node's.
type KVWatch struct {
	KV  *kv.Service
	Rep *statetest.Replicator
}

// Check refuses what Watch would refuse at once.
func (kw KVWatch) Check(m kv.Match, after string) error {
	_, _, err := kw.KV.WatchPlan(m, after)
	return err
}

// Watch follows the keys m selects from the token after until ctx ends,
// w fails or an event needed was compacted away.
func (kw KVWatch) Watch(ctx context.Context, m kv.Match, after string, w kv.Watcher) error {
	parts, pos, err := kw.KV.WatchPlan(m, after)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, ok := pos[p]; !ok {
			if pos[p], err = kw.read(ctx, p, func(r state.Reader) (uint64, []kv.Event, error) {
				rev, err := kv.Revision(r)
				return rev, nil, err
			}); err != nil {
				return err
			}
		}
	}
	if err := w.Ready(maps.Clone(pos)); err != nil {
		return err
	}
	t := time.NewTicker(kvPoll)
	defer t.Stop()
	for {
		for _, p := range parts {
			var events []kv.Event
			upTo, err := kw.read(ctx, p, func(r state.Reader) (uint64, []kv.Event, error) {
				var upTo uint64
				var err error
				events, upTo, err = kv.EventsAfter(r, pos[p], m, 256)
				return upTo, events, err
			})
			if err != nil {
				return err
			}
			if upTo > pos[p] {
				pos[p] = upTo
				if len(events) > 0 {
					if err := w.Events(p, events, maps.Clone(pos)); err != nil {
						return err
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (kw KVWatch) read(ctx context.Context, p uint64, fn func(state.Reader) (uint64, []kv.Event, error)) (uint64, error) {
	var out uint64
	_, err := kw.Rep.Read(ctx, p, true, func(r state.Reader) error {
		var err error
		out, _, err = fn(r)
		return err
	})
	return out, err
}

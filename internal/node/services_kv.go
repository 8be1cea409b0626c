package node

import (
	"context"
	"time"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/partition"
)

// kvExpireInterval is how often the partitions this node leads are checked
// for kv keys and leases due to expire: the documented tolerance of a TTL,
// on top of the leader's clock.
const kvExpireInterval = 250 * time.Millisecond

// kvExpireRounds bounds the expiry proposals of one partition per interval
// (each deletes at most a few hundred keys).
const kvExpireRounds = 8

// expirePartition expires kv keys and leases in partition p, which this
// node leads (startServices runs it through leaderLoop every
// kvExpireInterval): it reads when the next one is due from its own replica
// and, when that time has come by this leader's clock, proposes an Expire,
// whose leader-stamped time decides what goes; again while something is
// due. Replicas never consult their own clocks.
func (n *Node) expirePartition(s *kv.Service, p uint64) error {
	for range kvExpireRounds {
		ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
		due, ok, err := s.NextDue(ctx, p)
		if err == nil && ok && due <= n.clock.Now().UnixMilli() {
			_, err = s.Expire(ctx, p)
		}
		cancel()
		if err != nil || !ok || due > n.clock.Now().UnixMilli() {
			return err
		}
	}
	return nil
}

// kvWatch is the API's kv watches: the kv service says which partitions a
// watch follows, the feeds deliver.
type kvWatch struct {
	kv    *kv.Service
	feeds *partition.KVFeeds
}

var _ api.KVWatchService = kvWatch{}

// Check implements api.KVWatchService.
func (w kvWatch) Check(m kv.Match, after string) error {
	_, _, err := w.kv.WatchPlan(m, after)
	return err
}

// Watch implements api.KVWatchService.
func (w kvWatch) Watch(ctx context.Context, m kv.Match, after string, out kv.Watcher) error {
	parts, from, err := w.kv.WatchPlan(m, after)
	if err != nil {
		return err
	}
	return w.feeds.Watch(ctx, parts, m, from, out)
}

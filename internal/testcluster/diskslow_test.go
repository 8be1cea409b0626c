package testcluster_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// slowDisk returns an in-memory file system whose fsyncs take delay longer
// once slow is set, as a failing or overloaded disk's do.
func slowDisk(slow *atomic.Bool, delay time.Duration) vfs.FS {
	return syncDisk(func() error {
		if slow.Load() {
			time.Sleep(delay)
		}
		return nil
	})
}

// A node whose fsyncs turn slow hands over every leadership it holds and
// is given none back while it stays slow; writes keep being acknowledged
// through every node. Once its disk is fast again it may lead again, and
// the planner, balancing leaders, gives it some.
func TestDiskSlow_SlowNodeShedsLeadershipAndTakesItBack(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	var slow atomic.Bool
	const sick = 1
	c := testcluster.New(t, testcluster.Options{
		Nodes: 3, Partitions: 4,
		Configure: func(_ int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			cfg.DiskSlowSync = 200 * time.Millisecond
		},
		FS: func(i int) vfs.FS {
			if i == sick {
				return slowDisk(&slow, 600*time.Millisecond)
			}
			return vfs.NewMem()
		},
	})
	groups := []uint64{0, 1, 2, 3, 4} // the metadata group and the partitions
	leadsOne := func() error {
		for _, g := range groups {
			if c.LeaderOf(g) == sick {
				return nil
			}
		}
		return testcluster.ErrNotYet
	}
	poll.Until(t, 20*time.Second, "n2 leads a group", leadsOne)

	// Writes through the healthy nodes keep every replica syncing.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				if _, err := c.Client(2*w).KVPut(cctx, fmt.Sprintf("w%d-%d", w, i%50), []byte("v"), client.PutOptions{}); err == nil {
					writes.Add(1)
				}
				cancel()
			}
		})
	}
	defer func() { stop(); wg.Wait() }()

	slow.Store(true)
	poll.Until(t, 30*time.Second, "n2 sees its disk slow", func() error {
		if !c.Node(sick).Engine().DiskSlow() {
			return testcluster.ErrNotYet
		}
		return nil
	})
	poll.Until(t, 30*time.Second, "n2 leads no group", func() error {
		for _, g := range groups {
			if c.LeaderOf(g) == sick {
				return fmt.Errorf("n2 still leads group %d", g)
			}
		}
		return nil
	})
	before := writes.Load()
	for i := range 3 {
		testcluster.MustPut(t, c.Client(i), fmt.Sprintf("during%d", i), "v", client.PutOptions{})
	}
	poll.Until(t, 30*time.Second, "writes go on", func() error {
		if writes.Load() < before+20 {
			return testcluster.ErrNotYet
		}
		return nil
	})
	for _, g := range groups {
		if c.LeaderOf(g) == sick {
			t.Errorf("n2 took the leadership of group %d back with a slow disk", g)
		}
	}

	slow.Store(false)
	poll.Until(t, 30*time.Second, "n2 sees its disk fast again", func() error {
		if c.Node(sick).Engine().DiskSlow() {
			return testcluster.ErrNotYet
		}
		return nil
	})
	poll.Until(t, 60*time.Second, "n2 leads a group again", leadsOne)
	stop()
	wg.Wait()
	c.VerifyReplicas(30 * time.Second)
	for i := range 3 {
		if v, _ := testcluster.MustGet(t, c.Client(sick), fmt.Sprintf("during%d", i), client.GetOptions{}); v != "v" {
			t.Fatalf("during%d via n2 = %q", i, v)
		}
	}
}

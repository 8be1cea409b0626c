package testcluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// BenchmarkCluster_WritesWhileNodesStop measures what a rolling restart
// costs a client that writes one key at a time through a node that stays
// up. Each iteration stops node 1 or 2 gracefully (SIGTERM's Shutdown:
// leadership handed over), makes its address stop answering (dials to it
// hang, as to a stopped Kubernetes pod's old IP), restarts it, lets the
// others reach it again 3 s later (the cluster DNS's cache) and waits for
// it to be ready. It reports the slowest write (max-ms) and the writes
// slower than 250 ms (slow-writes), over every iteration.
//
//	go test -run xxx -bench BenchmarkCluster_WritesWhileNodesStop -benchtime 3x ./internal/testcluster/
func BenchmarkCluster_WritesWhileNodesStop(b *testing.B) {
	c := testcluster.New(b, testcluster.Options{Nodes: 3})
	c.WaitConverged(30 * time.Second)
	c.WaitLeadersBalanced(30 * time.Second)
	token := c.Client(0).Token()
	var urls []string
	for i := range 3 {
		urls = append(urls, "http://"+c.Node(i).HTTPAddr())
	}
	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	var took []time.Duration
	var failed []error
	var wg sync.WaitGroup
	wg.Go(func() {
		cl := client.New(urls[0], client.WithToken(token), client.WithFallbacks(urls[1:]...), client.WithAttemptTimeout(time.Second))
		for i := 0; ctx.Err() == nil; i++ {
			wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			wctx = client.WithIdempotencyKey(wctx, fmt.Sprintf("stop-%d", i))
			start := time.Now()
			_, err := cl.KVPut(wctx, fmt.Sprintf("stop/%d", i), []byte("v"), client.PutOptions{})
			cancel()
			mu.Lock()
			took = append(took, time.Since(start))
			if err != nil {
				failed = append(failed, err)
			}
			mu.Unlock()
		}
	})
	b.ResetTimer()
	for i := range b.N {
		victim := 1 + i%2
		addr := c.Node(victim).ClusterAddr()
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c.Node(victim).Shutdown(sctx)
		cancel()
		others := []int{0, 3 - victim}
		for _, o := range others {
			c.Node(o).Transport().Faults().CutDial(addr)
		}
		c.Kill(victim)
		time.Sleep(1500 * time.Millisecond) // the pod is replaced
		c.Restart(victim)
		time.Sleep(3 * time.Second)
		for _, o := range others {
			c.Node(o).Transport().Faults().Heal(addr)
		}
		poll.Until(b, 30*time.Second, "the restarted node ready", c.Node(victim).Ready)
		time.Sleep(time.Second)
	}
	b.StopTimer()
	stop()
	wg.Wait()
	if len(failed) > 0 {
		b.Fatalf("%d of %d writes failed, the first: %v", len(failed), len(took), failed[0])
	}
	slow := 0
	for _, d := range took {
		if d > 250*time.Millisecond {
			slow++
		}
	}
	b.ReportMetric(float64(slices.Max(took).Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(slow), "slow-writes")
	b.ReportMetric(float64(len(took)), "writes")
}

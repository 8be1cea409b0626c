package testcluster_test

import (
	"context"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/ratelimit"
	"github.com/parley-chat/parley/internal/testcluster"
)

// BenchmarkCluster_LimitedWrites measures what the per-user limits cost the
// post and queue send paths. Two 3-node clusters run side by side, one with
// the limits off and one with them on (too high to refuse anything); 16
// clients write as one user, each alternating between the clusters, so
// both see the same load from the rest of the machine, and spread over
// the nodes, so most writes reach a node that does not own the user's key.
// It reports each cluster's mean and median latency and their ratio
// (on/off). BENCH_NOSYNC=1 leaves fsync out, which makes the limiter's
// share largest.
func BenchmarkCluster_LimitedWrites(b *testing.B) {
	for _, op := range []string{"post", "send"} {
		b.Run(op, func(b *testing.B) {
			off, on := newWriteTarget(b, op, false), newWriteTarget(b, op, true)
			const clients = 16
			var next atomic.Int64
			lat := make([][2][]time.Duration, clients)
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range clients {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						for k, target := range [2]*writeTarget{off, on} {
							t0 := time.Now()
							if err := target.write(int(i)); err != nil {
								b.Error(err)
								return
							}
							lat[w][k] = append(lat[w][k], time.Since(t0))
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			var mean, p50 [2]float64
			for k, name := range []string{"off", "on"} {
				var all []time.Duration
				for w := range lat {
					all = append(all, lat[w][k]...)
				}
				if len(all) == 0 {
					b.Fatal("no write succeeded")
				}
				sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
				var sum time.Duration
				for _, d := range all {
					sum += d
				}
				mean[k] = float64(sum.Microseconds()) / float64(len(all)) / 1000
				p50[k] = float64(all[len(all)/2].Microseconds()) / 1000
				b.ReportMetric(mean[k], "mean-ms-"+name)
				b.ReportMetric(p50[k], "p50-ms-"+name)
			}
			b.ReportMetric(mean[1]/mean[0], "mean-on/off")
			b.ReportMetric(p50[1]/p50[0], "p50-on/off")
		})
	}
}

// writeTarget is one benchmark cluster and the write to send it.
type writeTarget struct {
	cls   []*client.Client
	write func(i int) error
}

// newWriteTarget starts a 3-node cluster with the limits off, or on but
// out of reach, and prepares op ("post" to a room or "send" to a queue).
func newWriteTarget(b *testing.B, op string, limits bool) *writeTarget {
	c := testcluster.New(b, testcluster.Options{
		Nodes: 3, Partitions: 16, Tick: 100 * time.Millisecond, NoSync: os.Getenv("BENCH_NOSYNC") != "",
		Configure: func(_ int, cfg *config.Config) {
			cfg.Limits = config.Limits{}
			if limits {
				huge := ratelimit.Rate{N: 1 << 30, Per: time.Second}
				cfg.Limits = config.Limits{Posts: huge, QueueSends: huge}
			}
		},
	})
	c.WaitLeadersBalanced(30 * time.Second)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, MaxConnsPerHost: 16}}
	t := &writeTarget{cls: make([]*client.Client, 3)}
	for i := range t.cls {
		t.cls[i] = c.ClientWith(i, client.WithHTTPClient(hc))
	}
	ctx := context.Background()
	if op == "post" {
		if _, err := t.cls[0].CreateRoom(ctx, client.RoomSpec{Name: "bench"}); err != nil {
			b.Fatal(err)
		}
		t.write = func(i int) error {
			_, err := t.cls[i%3].Post(ctx, "bench", "message", client.PostOptions{})
			return err
		}
		return t
	}
	if _, err := t.cls[0].CreateQueue(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	t.write = func(i int) error {
		_, err := t.cls[i%3].Send(ctx, "bench", "message", client.SendOptions{})
		return err
	}
	return t
}

package testcluster_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// After writes, every replica of every partition written to reports lag
// samples over the window, one leader per partition, and the apply lag
// histogram is in /metrics.
func TestCluster_Lag(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 3, 3)
	cl := c.Client(0)
	written := map[uint64]bool{}
	for i := range 30 {
		key := fmt.Sprintf("lag-%d", i)
		if _, err := cl.KVPut(apiCtx(t), key, []byte("v"), client.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		written[c.Node(0).Router().PartitionOf(key)] = true
	}
	var rep *client.LagReport
	poll.Until(t, 10*time.Second, "lag samples on every replica", func() error {
		var err error
		if rep, err = cl.ClusterLag(apiCtx(t)); err != nil {
			return err
		}
		for p := range written {
			replicas, leaders := 0, 0
			for _, r := range rep.Replicas {
				if r.Group != p || r.Samples == 0 {
					continue
				}
				replicas++
				if r.Role == "leader" {
					leaders++
				}
			}
			if replicas != 3 || leaders != 1 {
				return fmt.Errorf("partition %d: %d replicas with samples, %d leaders: %+v", p, replicas, leaders, rep.Replicas)
			}
		}
		return nil
	})
	if len(rep.Unreachable) != 0 || rep.WindowMs <= 0 {
		t.Fatalf("unreachable %v, window %d ms", rep.Unreachable, rep.WindowMs)
	}
	for _, r := range rep.Replicas {
		q := r.LagMs
		if q.P50 < 0 || q.P50 > q.P99 || q.P99 > q.Max || r.LagEntries.P50 > r.LagEntries.Max {
			t.Fatalf("replica %s of %d: quantiles out of order: %+v", r.Node, r.Group, r)
		}
		if r.Replica == 0 || r.Node == "" {
			t.Fatalf("replica without id or node: %+v", r)
		}
	}

	resp, err := http.Get("http://" + c.Node(1).HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`parley_replica_apply_lag_seconds_count{role="follower"}`, `parley_replica_apply_lag_seconds_bucket{role=`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics has no %s", want)
		}
	}
}

// BenchmarkCluster_ReplicaLag measures how far replicas trail their leader
// under a durable kv put load (fsync on, real disk) with 3 and with 5
// replicas per partition, beside the disk's fsync time measured in the same
// run by a probe appending 4 KiB and syncing, in a loop, next to the nodes'
// data. Lag figures come from GET /api/v1/cluster/lag (per replica over the
// last 10 s, millisecond resolution): follower p50 is the median of the
// followers' p50s, follower p99 the largest of their p99s; leader p50 is
// the leaders' own commit-to-apply time.
func BenchmarkCluster_ReplicaLag(b *testing.B) {
	for _, nodes := range []int{3, 5} {
		b.Run(fmt.Sprintf("replicas=%d", nodes), func(b *testing.B) {
			c := testcluster.New(b, testcluster.Options{Nodes: nodes, ReplicationFactor: nodes, Partitions: 16, Tick: 100 * time.Millisecond})
			c.WaitLeadersBalanced(60 * time.Second)
			const clients = 16
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
			cls := make([]*client.Client, nodes)
			for i := range cls {
				cls[i] = c.ClientWith(i, client.WithHTTPClient(hc))
			}
			stop := make(chan struct{})
			fsyncs := make(chan []time.Duration, 1)
			go func() { fsyncs <- probeFsync(b, stop) }()
			value := make([]byte, 256)
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if _, err := cls[(w+int(i))%nodes].KVPut(context.Background(), fmt.Sprintf("k%d", i%10000), value, client.PutOptions{}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(stop)
			fs := <-fsyncs
			rep, err := cls[0].ClusterLag(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			var p50s []int64
			var p99, leaderP50 []int64
			for _, r := range rep.Replicas {
				if r.Group == 0 || r.Samples == 0 {
					continue
				}
				if r.Role == "leader" {
					leaderP50 = append(leaderP50, r.LagMs.P50)
					continue
				}
				p50s = append(p50s, r.LagMs.P50)
				p99 = append(p99, r.LagMs.P99)
			}
			if len(p50s) == 0 || len(fs) == 0 {
				b.Skip("no samples (run with a longer -benchtime)")
			}
			slices.Sort(p50s)
			slices.Sort(leaderP50)
			slices.Sort(fs)
			b.ReportMetric(float64(p50s[len(p50s)/2]), "follower-lag-p50-ms")
			b.ReportMetric(float64(slices.Max(p99)), "follower-lag-p99-ms")
			b.ReportMetric(float64(leaderP50[len(leaderP50)/2]), "leader-lag-p50-ms")
			b.ReportMetric(float64(fs[len(fs)/2].Microseconds())/1000, "fsync-p50-ms")
			b.ReportMetric(float64(fs[len(fs)*99/100].Microseconds())/1000, "fsync-p99-ms")
		})
	}
}

// probeFsync appends 4 KiB to a file beside the nodes' data and syncs it, in
// a loop until stop, and returns the sync times.
func probeFsync(b *testing.B, stop <-chan struct{}) []time.Duration {
	f, err := os.CreateTemp(b.TempDir(), "fsync-probe-*")
	if err != nil {
		b.Error(err)
		return nil
	}
	defer f.Close()
	buf := make([]byte, 4096)
	var out []time.Duration
	for {
		select {
		case <-stop:
			return out
		default:
		}
		if _, err := f.Write(buf); err != nil {
			b.Error(err)
			return out
		}
		t0 := time.Now()
		if err := f.Sync(); err != nil {
			b.Error(err)
			return out
		}
		out = append(out, time.Since(t0))
	}
}

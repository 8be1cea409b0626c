package testcluster_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/bench"
	"github.com/parley-chat/parley/internal/testcluster"
)

// BenchmarkCluster_KVPut measures durable replicated puts through the HTTP
// API of a 3-node in-process cluster on real disk (fsync on), 16 partitions,
// with clients spread over the nodes: ops/s and latency percentiles.
func BenchmarkCluster_KVPut(b *testing.B) {
	for _, tc := range []struct {
		clients  int
		toLeader bool
	}{{1, false}, {64, false}, {64, true}} {
		clients := tc.clients
		name := fmt.Sprintf("clients=%d", clients)
		if tc.toLeader {
			name += "/to-leader" // no forwarding: shows what the extra hop costs
		}
		b.Run(name, func(b *testing.B) {
			c := testcluster.New(b, testcluster.Options{Nodes: 3, Partitions: 16, Tick: 100 * time.Millisecond, NoSync: os.Getenv("BENCH_NOSYNC") != ""})
			c.WaitLeadersBalanced(30 * time.Second)
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
			cls := make([]*client.Client, 3)
			for i := range cls {
				cls[i] = c.ClientWith(i, client.WithHTTPClient(hc))
			}
			value := make([]byte, 256)
			var next atomic.Int64
			lat := make([][]time.Duration, clients)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := 0; w < clients; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						key := fmt.Sprintf("k%d", i%10000)
						target := int(i) % 3
						if tc.toLeader {
							if l := c.LeaderOf(c.Node(0).Router().PartitionOf(key)); l >= 0 {
								target = l
							}
						}
						t0 := time.Now()
						if _, err := cls[target].KVPut(context.Background(), key, value, client.PutOptions{}); err != nil {
							b.Error(err)
							return
						}
						lat[w] = append(lat[w], time.Since(t0))
					}
				}(w)
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
			for i := 0; i < 3; i++ {
				st := c.Node(i).Engine().Stats()
				b.Logf("n%d: rounds %d syncs %d applied %d dropped %d; mean synced commit %v", i+1, st.Rounds.Load(), st.Syncs.Load(),
					st.EntriesApplied.Load(), st.ProposalsDropped.Load(), time.Duration(st.SyncNanos.Load()/max(1, st.Syncs.Load())))
			}
			if len(all) > 0 {
				b.ReportMetric(float64(len(all))/elapsed.Seconds(), "puts/s")
				b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
			}
		})
	}
}

// BenchmarkCluster_Queue measures messages through one durable queue of a
// 3-node in-process cluster on real disk (fsync on), with the workload of
// `parley bench queue`: consumers spread over the nodes each take a message
// under a lease and ack it (one op = one message through), as many
// producers send, paced by the acks. Profile it with -cpuprofile.
func BenchmarkCluster_Queue(b *testing.B) {
	for _, clients := range []int{1, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { benchClusterQueue(b, clients, bench.QueueOptions{}) })
	}
}

// benchClusterQueue runs the queue workload on a new 3-node cluster with
// clients consumers and as many producers, with the features that shape
// sets of bench.QueueOptions (DeadLettersPriorities, AckOnReceive). Besides
// msgs/s it reports the CPU the whole process (three nodes, clients and
// producers) spent per message, steadier than msgs/s on a shared machine.
func benchClusterQueue(b *testing.B, clients int, shape bench.QueueOptions) {
	c := testcluster.New(b, testcluster.Options{Nodes: 3, Partitions: 16, Tick: 100 * time.Millisecond, NoSync: os.Getenv("BENCH_NOSYNC") != ""})
	c.WaitLeadersBalanced(30 * time.Second)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients, MaxConnsPerHost: 2 * clients}}
	cls := make([]*client.Client, 3)
	for i := range cls {
		cls[i] = c.ClientWith(i, client.WithHTTPClient(hc))
	}
	w, err := bench.NewQueue(bench.QueueOptions{
		Clients: cls, Queues: 1, Producers: clients, Size: 200,
		AckTimeout: 30 * time.Second, Wait: 5 * time.Second, QueuePrefix: "bench-",
		DeadLettersPriorities: shape.DeadLettersPriorities, AckOnReceive: shape.AckOnReceive,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := bench.ProcessCPU()
	rep, err := bench.Run(context.Background(), w, bench.Options{Workers: clients, Requests: b.N, Warmup: 500 * time.Millisecond})
	cpu := bench.ProcessCPU() - cpu0 // the warm-up's share included
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if rep.Errors > 0 {
		b.Errorf("%d of %d operations failed: %v", rep.Errors, rep.Ops+rep.Errors, rep.ErrorKinds)
	}
	for i := 0; i < 3; i++ {
		st := c.Node(i).Engine().Stats()
		b.Logf("n%d: rounds %d syncs %d applied %d dropped %d", i+1, st.Rounds.Load(), st.Syncs.Load(), st.EntriesApplied.Load(), st.ProposalsDropped.Load())
	}
	b.ReportMetric(rep.OpsPerS, "msgs/s")
	if n := rep.Ops + rep.Errors; n > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/msg")
	}
	b.ReportMetric(rep.Latency.At(50), "p50-ms")
	b.ReportMetric(rep.Latency.At(99), "p99-ms")
}

package testcluster_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/bench"
	"github.com/parley-chat/parley/internal/testcluster"
)

// BenchmarkCluster_QueueFeatures is BenchmarkCluster_Queue with 16
// consumers, with the dead-letter queue, delivery limit and priorities off
// and on (bench.QueueOptions.DeadLettersPriorities): the ratio of the two
// msgs/s is what those features cost end to end.
func BenchmarkCluster_QueueFeatures(b *testing.B) {
	const clients = 16
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("dlq+priorities=%v", on), func(b *testing.B) {
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
				DeadLettersPriorities: on,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			b.ResetTimer()
			rep, err := bench.Run(context.Background(), w, bench.Options{Workers: clients, Requests: b.N, Warmup: 500 * time.Millisecond})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if rep.Errors > 0 {
				b.Errorf("%d of %d operations failed: %v", rep.Errors, rep.Ops+rep.Errors, rep.ErrorKinds)
			}
			b.ReportMetric(rep.OpsPerS, "msgs/s")
			b.ReportMetric(rep.Latency.At(50), "p50-ms")
			b.ReportMetric(rep.Latency.At(99), "p99-ms")
		})
	}
}

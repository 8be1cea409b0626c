package testcluster_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/testcluster"
)

// BenchmarkCluster_KVWatchFanout measures kv watch fan-out on a 3-node
// in-process cluster (fsync on, 16 partitions): 1,000 watchers of one key,
// spread over the nodes (Server-Sent Events), and one writer putting the
// key b.N times, one put at a time. It reports the put's latency and the
// delivery latency (from the put's start to each watcher's receipt) at the
// 50th and 99th percentiles.
func BenchmarkCluster_KVWatchFanout(b *testing.B) {
	const watchers = 1000
	c := testcluster.New(b, testcluster.Options{Nodes: 3, Partitions: 16, Tick: 100 * time.Millisecond})
	c.WaitLeadersBalanced(30 * time.Second)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: watchers}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cls := make([]*client.Client, 3)
	for i := range cls {
		cls[i] = c.ClientWith(i, client.WithHTTPClient(hc))
	}
	const key = "fan/config"
	var mu sync.Mutex
	var delivery []time.Duration
	var ready, done sync.WaitGroup
	for w := range watchers {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			kw, err := cls[w%3].KVWatch(ctx, client.WatchOptions{Key: key})
			ready.Done()
			if err != nil {
				b.Errorf("watcher %d: %v", w, err)
				return
			}
			defer kw.Close()
			for n := 0; n < b.N; {
				ch, err := kw.Next()
				if err != nil {
					if ctx.Err() == nil {
						b.Errorf("watcher %d: %v", w, err)
					}
					return
				}
				now := time.Now()
				for _, e := range ch.Events {
					sent, _ := strconv.ParseInt(string(e.Value), 10, 64)
					mu.Lock()
					delivery = append(delivery, now.Sub(time.Unix(0, sent)))
					mu.Unlock()
					n++
				}
			}
		}()
	}
	ready.Wait()
	writer := cls[0]
	puts := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := writer.KVPut(ctx, key, []byte(strconv.FormatInt(start.UnixNano(), 10)), client.PutOptions{}); err != nil {
			b.Fatal(err)
		}
		puts = append(puts, time.Since(start))
	}
	waited := make(chan struct{})
	go func() { done.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(time.Minute):
		b.Fatalf("watchers did not receive every put within a minute")
	}
	b.StopTimer()
	cancel()
	slices.Sort(puts)
	slices.Sort(delivery)
	at := func(d []time.Duration, p int) float64 { return float64(d[len(d)*p/100].Microseconds()) / 1000 }
	b.ReportMetric(at(puts, 50), "put-p50-ms")
	b.ReportMetric(at(puts, 99), "put-p99-ms")
	b.ReportMetric(at(delivery, 50), "delivery-p50-ms")
	b.ReportMetric(at(delivery, 99), "delivery-p99-ms")
	b.ReportMetric(float64(len(delivery)), "deliveries")
	if len(delivery) != watchers*b.N {
		b.Errorf("%d deliveries, want %d", len(delivery), watchers*b.N)
	}
}

package testcluster_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/bench"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/testcluster"
)

// BenchmarkCluster_PostSearchIndexing measures room posts through the HTTP
// API of a 3-node cluster (4 partitions, RF 3, fsync on unless
// BENCH_NOSYNC is set) with chat search indexing on and off
// (config.NoSearchIndex): posts/s with 32 clients over 16 rooms, and the
// CPU all three nodes spent per post. BENCH_SEARCH_REPLICAS sets
// --search-replicas (default 1), BENCH_SEARCH_DIR --search-dir.
func BenchmarkCluster_PostSearchIndexing(b *testing.B) {
	for _, indexing := range []bool{true, false} {
		b.Run(fmt.Sprintf("indexing=%v", indexing), func(b *testing.B) {
			benchPosts(b, indexing)
		})
	}
}

func benchPosts(b *testing.B, indexing bool) {
	const clients, rooms = 32, 16
	c := testcluster.New(b, testcluster.Options{Nodes: 3, Partitions: 4, Tick: 100 * time.Millisecond,
		NoSync: os.Getenv("BENCH_NOSYNC") != "",
		Configure: func(i int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			cfg.Limits.Posts.N = 0 // no posts limit
			cfg.NoSearchIndex = !indexing
			if k, err := strconv.Atoi(os.Getenv("BENCH_SEARCH_REPLICAS")); err == nil {
				cfg.SearchReplicas = k
			}
			if dir := os.Getenv("BENCH_SEARCH_DIR"); dir != "" {
				cfg.SearchDir = filepath.Join(dir, fmt.Sprintf("%s-%d", b.Name(), i))
			}
		}})
	c.WaitLeadersBalanced(30 * time.Second)
	ann := signUp(b, c, 0, 0, "ann")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	cls := make([]*client.Client, 3)
	for i := range cls {
		cls[i] = c.ClientWith(i, client.WithHTTPClient(hc), client.WithToken(ann.Token()))
	}
	ctx := context.Background()
	for r := range rooms {
		if _, err := cls[0].CreateRoom(ctx, client.RoomSpec{Name: fmt.Sprintf("room%d", r)}); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ResetTimer()
	start, cpu0 := time.Now(), bench.ProcessCPU()
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
				text := fmt.Sprintf("message %d from worker %d about launch rocket fuel and lunch menu", i, w)
				if _, err := cls[int(i)%3].Post(ctx, fmt.Sprintf("room%d", i%rooms), text, client.PostOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "posts/s")
	b.ReportMetric(float64((bench.ProcessCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/post")
}

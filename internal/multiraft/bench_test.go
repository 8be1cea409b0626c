package multiraft

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/bench"
)

// benchPayload is the size of one proposed command, as in the storage
// benchmarks and BenchmarkFsync.
const benchPayload = 256

// BenchmarkEngine_Propose measures replicated, durable proposals: three
// engines in one process, each on its own Pebble database on the real disk
// with fsync on, joined by an in-process network, with production timing.
// Proposers are spread round-robin over the groups; each proposes to its
// group's leader, one proposal in flight at a time. Compare p50-ms with
// BenchmarkFsync (internal/storage) measured in the same run.
func BenchmarkEngine_Propose(b *testing.B) {
	for _, groups := range []int{1, 16} {
		for _, proposers := range []int{1, 64} {
			b.Run(fmt.Sprintf("groups=%d/proposers=%d", groups, proposers), func(b *testing.B) {
				benchPropose(b, groups, proposers)
			})
		}
	}
}

func benchPropose(b *testing.B, groups, proposers int) {
	c := newBenchCluster(b, b.TempDir(), 3, groups)
	c.elect()
	if n := c.leadersPerEngine(); slices.Max(n)-slices.Min(n) > 1 {
		b.Logf("leaders are unevenly spread: groups led per engine %v", n)
	}
	cmd := bytes.Repeat([]byte{1}, benchPayload)
	ps := make([]*benchProposer, proposers)
	lats := make([]time.Duration, b.N) // by ticket: no sharing, no growth
	ids := make([][]byte, proposers)
	for i := range ps {
		g := uint64(i%groups + 1)
		ps[i] = &benchProposer{c: c, group: g, leader: max(c.leaderOf(g), 0)}
		ids[i] = make([]byte, 17)
	}
	var (
		next    atomic.Int64
		failed  atomic.Bool
		errOnce sync.Once
		err     error
		wg      sync.WaitGroup
	)
	syncs0, commits0 := c.syncs(), c.commits()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, id := ps[i], ids[i]
			id[0] = 'b'
			binary.BigEndian.PutUint64(id[1:], uint64(i))
			for n := next.Add(1); n <= int64(b.N) && !failed.Load(); n = next.Add(1) {
				binary.BigEndian.PutUint64(id[9:], uint64(n))
				t0 := time.Now()
				if perr := p.propose(id, cmd); perr != nil {
					errOnce.Do(func() { err = perr })
					failed.Store(true)
					return
				}
				lats[n-1] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	retries := 0
	for _, p := range ps {
		retries += p.retries
	}
	if retries > 0 {
		b.Logf("%d proposal attempts were retried", retries)
	}
	slices.Sort(lats)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "proposals/s")
	b.ReportMetric(float64(c.syncs()-syncs0)/float64(b.N), "fsyncs/entry")
	b.ReportMetric(float64(c.commits()-commits0)/float64(b.N), "commits/entry")
	b.ReportMetric(msOf(percentile(lats, 0.50)), "p50-ms")
	b.ReportMetric(msOf(percentile(lats, 0.99)), "p99-ms")
}

// percentile returns the nearest-rank percentile q (0 < q <= 1) of sorted.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// TestEngine_IdleCPU measures what a node costs when nothing happens: three
// engines with 17 groups each (16 partitions and the metadata group) and
// production timing, idle for 5 s once every group has a leader. It logs the
// process CPU time over that window as a percentage of one core and asserts
// nothing (no timed assertions). Set PARLEY_MEASURE_IDLE=1 to run it.
func TestEngine_IdleCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement, not run under -short")
	}
	if os.Getenv("PARLEY_MEASURE_IDLE") != "1" {
		t.Skip("set PARLEY_MEASURE_IDLE=1 to measure idle CPU")
	}
	const (
		groups = 17
		window = 5 * time.Second
	)
	c := newBenchCluster(t, t.TempDir(), 3, groups)
	c.elect()
	waitSettled(t, c)
	runtime.GC() // setup's garbage is not idle cost

	rounds0, syncs0 := c.rounds(), c.syncs()
	batches0, msgs0 := c.net.batches.Load(), c.net.msgs.Load()
	cpu0, wall0 := bench.ProcessCPU(), time.Now()
	time.Sleep(window)
	cpu1, wall := bench.ProcessCPU(), time.Since(wall0)
	rounds, syncs := c.rounds()-rounds0, c.syncs()-syncs0
	batches, msgs := c.net.batches.Load()-batches0, c.net.msgs.Load()-msgs0

	sec := wall.Seconds()
	t.Logf("idle CPU: %.2f%% of one core (user+sys %v over %v wall; 3 engines x %d groups, tick %v)",
		100*(cpu1-cpu0).Seconds()/sec, (cpu1 - cpu0).Round(time.Millisecond), wall.Round(time.Millisecond),
		groups, DefaultConfig().TickInterval)
	t.Logf("idle activity: %.0f driver rounds/s, %.1f fsyncs/s, %.0f send batches/s carrying %.0f raft messages/s (all 3 engines)",
		float64(rounds)/sec, float64(syncs)/sec, float64(batches)/sec, float64(msgs)/sec)
	t.Logf("groups led per engine: %v", c.leadersPerEngine())
}

// rounds returns the driver rounds of all engines so far.
func (c *benchCluster) rounds() uint64 {
	var n uint64
	for _, e := range c.engines {
		n += e.Stats().Rounds.Load()
	}
	return n
}

// waitSettled waits until every replica of every group has applied as far
// as the group's leader, so the window measures no catch-up.
func waitSettled(t *testing.T, c *benchCluster) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g := uint64(1); g <= uint64(c.groups); g++ {
		for {
			l := c.leaderOf(g)
			settled := l >= 0
			for _, e := range c.engines {
				settled = settled && e.Applied(g) >= c.engines[l].Applied(g)
			}
			if settled {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("group %d: replicas did not catch up with the leader", g)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

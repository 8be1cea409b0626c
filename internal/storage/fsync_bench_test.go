package storage

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkFsync measures this disk's raw durable-write latency: append 256
// bytes to a file in the benchmark's temporary directory and fsync it, one
// write at a time. It is the baseline the product's performance targets are
// stated against (for example, one writer's p50 at most 2.5x the fsync p50):
// run it in the same invocation as the benchmarks compared with it, on the
// same disk.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := bytes.Repeat([]byte{'x'}, 256)
	lats := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		lats = append(lats, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lats)
	b.ReportMetric(fsyncPercentileMs(lats, 0.50), "p50-ms")
	b.ReportMetric(fsyncPercentileMs(lats, 0.99), "p99-ms")
}

// fsyncPercentileMs returns the nearest-rank percentile q of sorted, in
// milliseconds.
func fsyncPercentileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(max(int(math.Ceil(q*float64(len(sorted))))-1, 0), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Millisecond)
}

package bench

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"
)

// record returns a histogram holding ds.
func record(ds ...time.Duration) *Histogram {
	h := &Histogram{}
	for _, d := range ds {
		h.Record(d)
	}
	return h
}

// span returns lo, lo+step, ... up to hi.
func span(lo, hi, step time.Duration) []time.Duration {
	var ds []time.Duration
	for d := lo; d <= hi; d += step {
		ds = append(ds, d)
	}
	return ds
}

func TestHistogram_Percentile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []time.Duration
		p      float64
		want   time.Duration
		tol    float64 // relative tolerance; 0 = exact
	}{
		{"empty", nil, 50, 0, 0},
		{"single value p50", []time.Duration{7}, 50, 7, 0},
		{"single value p100", []time.Duration{7}, 100, 7, 0},
		// Nearest rank on 1..100 ns (exact buckets): p -> the p-th value.
		{"1..100 p50", span(1, 100, 1), 50, 50, 0},
		{"1..100 p66", span(1, 100, 1), 66, 66, 0},
		{"1..100 p75", span(1, 100, 1), 75, 75, 0},
		{"1..100 p80", span(1, 100, 1), 80, 80, 0},
		{"1..100 p90", span(1, 100, 1), 90, 90, 0},
		{"1..100 p95", span(1, 100, 1), 95, 95, 0},
		{"1..100 p98", span(1, 100, 1), 98, 98, 0},
		{"1..100 p99", span(1, 100, 1), 99, 99, 0},
		{"1..100 p100", span(1, 100, 1), 100, 100, 0},
		// Rank rounds up: ceil(0.5*3) = 2nd of 3.
		{"three values p50", []time.Duration{10, 20, 30}, 50, 20, 0},
		{"three values p66", []time.Duration{10, 20, 30}, 66, 20, 0},
		{"three values p67", []time.Duration{10, 20, 30}, 67, 30, 0},
		{"p0 is the minimum", []time.Duration{10, 20, 30}, 0, 10, 0},
		// Milliseconds: within the bucket precision.
		{"1..1000 ms p50", span(time.Millisecond, time.Second, time.Millisecond), 50, 500 * time.Millisecond, 0.005},
		{"1..1000 ms p99", span(time.Millisecond, time.Second, time.Millisecond), 99, 990 * time.Millisecond, 0.005},
		{"1..1000 ms p100 exact", span(time.Millisecond, time.Second, time.Millisecond), 100, time.Second, 0},
		{"outlier is the max", append(span(time.Millisecond, 99*time.Millisecond, time.Millisecond), 5*time.Second), 100, 5 * time.Second, 0},
		{"outlier above p99", append(span(time.Millisecond, 99*time.Millisecond, time.Millisecond), 5*time.Second), 99, 99 * time.Millisecond, 0.005},
		{"huge values are clamped", []time.Duration{100 * time.Hour}, 50, 100 * time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := record(tc.values...).Percentile(tc.p)
			if tc.tol == 0 && got != tc.want || math.Abs(float64(got-tc.want)) > tc.tol*float64(tc.want) {
				t.Errorf("p%v = %v, want %v (tolerance %v)", tc.p, got, tc.want, tc.tol)
			}
		})
	}
}

func TestHistogram_AgainstSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ds []time.Duration
	h := &Histogram{}
	for range 100000 {
		// Log-normal-ish latencies around a millisecond with a long tail.
		d := time.Duration(math.Exp(rng.NormFloat64()) * float64(time.Millisecond))
		ds = append(ds, d)
		h.Record(d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	for _, p := range Levels() {
		want := ds[int(math.Ceil(p/100*float64(len(ds))))-1]
		got := h.Percentile(p)
		if math.Abs(float64(got-want)) > 0.005*float64(want) {
			t.Errorf("p%v = %v, want %v within 0.5%%", p, got, want)
		}
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	if h.Min() != ds[0] || h.Max() != ds[len(ds)-1] || h.Mean() != sum/time.Duration(len(ds)) {
		t.Errorf("min %v max %v mean %v, want %v %v %v", h.Min(), h.Max(), h.Mean(), ds[0], ds[len(ds)-1], sum/time.Duration(len(ds)))
	}
}

func TestHistogram_Buckets(t *testing.T) {
	prev := -1
	for v := int64(0); v < 1<<40; v = v*9/8 + 1 {
		i := bucketOf(v)
		lo, hi := bucketRange(i)
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d = [%d, %d]", v, i, lo, hi)
		}
		if i < prev {
			t.Fatalf("bucket of %d is %d, below the previous %d", v, i, prev)
		}
		if hi-lo > lo/subCount {
			t.Fatalf("bucket %d = [%d, %d] wider than 1/%d", i, lo, hi, subCount)
		}
		prev = i
	}
	if i := bucketOf(math.MaxInt64); i != nBuckets-1 {
		t.Errorf("largest value in bucket %d, want the last, %d", i, nBuckets-1)
	}
}

func TestHistogram_MergeAndConcurrency(t *testing.T) {
	a, b := &Histogram{}, &Histogram{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				a.Record(time.Duration(w*1000+i+1) * time.Microsecond)
			}
		})
	}
	wg.Wait()
	b.Record(time.Nanosecond)
	b.Record(time.Hour)
	a.Merge(b)
	if a.Count() != 8002 || a.Min() != time.Nanosecond || a.Max() != time.Hour {
		t.Errorf("count %d min %v max %v", a.Count(), a.Min(), a.Max())
	}
	empty := &Histogram{}
	empty.Merge(&Histogram{})
	if empty.Count() != 0 || empty.Min() != 0 || empty.Percentile(99) != 0 {
		t.Errorf("merging empties gave %d values", empty.Count())
	}
}

func BenchmarkHistogram_Record(b *testing.B) {
	h := &Histogram{}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Record(time.Duration(i%5000) * time.Microsecond)
	}
}

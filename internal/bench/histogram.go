package bench

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The histogram is log-linear, like HdrHistogram: values below linearMax
// nanoseconds have a bucket each; above, every power of two is split into
// subCount buckets, so a bucket is at most 1/128 (0.8%) of its values wide.
// Values are clamped to maxTracked (about 4.9 hours).
const (
	subBits    = 7
	subCount   = 1 << subBits     // buckets per power of two
	linearMax  = 2 * subCount     // values below have exact buckets
	maxShift   = 44 - subBits - 1 // shift of the highest power of two tracked
	maxTracked = 1<<44 - 1
	nBuckets   = linearMax + maxShift*subCount
)

// Histogram records durations with bounded relative error in constant
// memory. It is safe for concurrent use: Record is lock-free. The zero
// value is empty and ready.
type Histogram struct {
	counts [nBuckets]atomic.Uint64
	n      atomic.Uint64
	sum    atomic.Uint64 // nanoseconds
	min    atomic.Int64  // nanoseconds + 1, 0 while empty
	max    atomic.Int64
}

// bucketOf returns the bucket index of v nanoseconds.
func bucketOf(v int64) int {
	if v < linearMax {
		return int(max(v, 0))
	}
	v = min(v, maxTracked)
	shift := bits.Len64(uint64(v)) - subBits - 1 // leaves subBits+1 top bits
	top := int(v >> shift)                       // in [subCount, 2*subCount)
	return linearMax + (shift-1)*subCount + top - subCount
}

// bucketRange returns the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi int64) {
	if i < linearMax {
		return int64(i), int64(i)
	}
	shift := (i-linearMax)/subCount + 1
	top := int64((i-linearMax)%subCount + subCount)
	return top << shift, (top+1)<<shift - 1
}

// Record adds one duration (negative ones count as 0).
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucketOf(v)].Add(1)
	h.n.Add(1)
	h.sum.Add(uint64(v))
	for {
		m := h.min.Load()
		if m != 0 && m <= v+1 || h.min.CompareAndSwap(m, v+1) {
			break
		}
	}
	for {
		m := h.max.Load()
		if m >= v || h.max.CompareAndSwap(m, v) {
			break
		}
	}
}

// Merge adds every value recorded in o to h. o must not change meanwhile.
func (h *Histogram) Merge(o *Histogram) {
	if o.Count() == 0 {
		return
	}
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	h.n.Add(o.n.Load())
	h.sum.Add(o.sum.Load())
	if m := o.min.Load(); m != 0 {
		for {
			cur := h.min.Load()
			if cur != 0 && cur <= m || h.min.CompareAndSwap(cur, m) {
				break
			}
		}
	}
	for m := o.max.Load(); ; {
		cur := h.max.Load()
		if cur >= m || h.max.CompareAndSwap(cur, m) {
			break
		}
	}
}

// Count returns how many values were recorded.
func (h *Histogram) Count() uint64 { return h.n.Load() }

// Min returns the smallest value recorded (exact), 0 when empty.
func (h *Histogram) Min() time.Duration {
	if m := h.min.Load(); m > 0 {
		return time.Duration(m - 1)
	}
	return 0
}

// Max returns the largest value recorded (exact), 0 when empty.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Mean returns the average value (exact), 0 when empty.
func (h *Histogram) Mean() time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// Percentile returns the value below or at which p percent of the recorded
// values lie, by the nearest-rank method Apache Bench uses: the value of
// rank ceil(p/100 * count). Values under 256 ns are exact; larger ones are
// the middle of their bucket (within 0.4%), clamped to the exact minimum
// and maximum. Percentile(100) is the maximum; an empty histogram gives 0.
func (h *Histogram) Percentile(p float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	if p >= 100 {
		return h.Max()
	}
	rank := uint64(math.Ceil(p / 100 * float64(n)))
	rank = max(rank, 1)
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			lo, hi := bucketRange(i)
			v := time.Duration(lo + (hi-lo)/2)
			return min(max(v, h.Min()), h.Max())
		}
	}
	return h.Max() // counts raced ahead of n: only under concurrent Record
}

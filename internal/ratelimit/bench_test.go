package ratelimit

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// benchConfig never refuses, so the benchmarks measure the bookkeeping of
// an allowed request.
var benchConfig = Config{
	Rates: map[string]Rate{Posts: {N: 1 << 30, Per: time.Second}},
	Slots: map[string]int{LongPolls: 1 << 30},
}

var benchKeys = func() []string {
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprint("user", i)
	}
	return keys
}()

// BenchmarkTable_Take is the owner's side of one post: a token from a
// key's bucket.
func BenchmarkTable_Take(b *testing.B) {
	b.Run("one key", func(b *testing.B) {
		tb := NewTable(benchConfig)
		now := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			tb.Take(Posts, "ann", 1, now)
		}
	})
	b.Run("1024 keys parallel", func(b *testing.B) {
		tb := NewTable(benchConfig)
		now := time.Now()
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(1))
			for pb.Next() {
				i++
				tb.Take(Posts, benchKeys[i%len(benchKeys)], 1, now)
			}
		})
	})
}

// BenchmarkStash_Spend is a requesting node's side of one post when the
// owner is another node: a stashed token, or the advice to ask.
func BenchmarkStash_Spend(b *testing.B) {
	s := NewStash(benchConfig)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if ok, _, want := s.Spend(Posts, "ann", now); !ok {
			s.Fill(Posts, "ann", want, want, 0, now)
		}
	}
}

// BenchmarkHoldings_ReserveRelease is one long poll's bookkeeping on the
// node that serves it, with the slot kept locally between polls.
func BenchmarkHoldings_ReserveRelease(b *testing.B) {
	h := NewHoldings()
	now := time.Now()
	c, _ := h.Reserve(LongPolls, "ann", now)
	h.Acquired(c, true, now)
	h.Release(LongPolls, "ann", now)
	b.ReportAllocs()
	for b.Loop() {
		if c, local := h.Reserve(LongPolls, "ann", now); !local {
			h.Acquired(c, true, now)
		}
		h.Release(LongPolls, "ann", now)
	}
}

// BenchmarkLocal_Take is a whole Take on a node that owns the key.
func BenchmarkLocal_Take(b *testing.B) {
	l := NewLocal(benchConfig, nil)
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Take(b.Context(), Posts, "ann")
	}
}

package search

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/bench"
)

// benchCorpus is how many messages BenchmarkIndex_Search indexes:
// go test -bench Index_Search -search.corpus 1000000 ./internal/search
var benchCorpus = flag.Int("search.corpus", 100_000, "messages in the search benchmark's corpus")

// benchWords is a vocabulary drawn Zipf-like, as natural text is: a few
// words are in most messages, most words in few.
func benchWords(n int) []string {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("w%x", i*2654435761%(1<<24))
	}
	return words
}

// buildBenchIndex indexes n synthetic messages (12 words each, 200 rooms,
// 2,000 senders, one in 20 a whisper) and returns the index and the heap
// bytes it takes per message (its files: DiskBytes).
func buildBenchIndex(b *testing.B, n int, words []string) (*Index, float64) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 4, uint64(len(words)-1))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	x, err := NewIndex(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	batch := x.NewBatch()
	text := make([]string, 12)
	for i := range n {
		for k := range text {
			text[k] = words[zipf.Uint64()]
		}
		d := Doc{Room: fmt.Sprintf("room%d", i%200), Seq: uint64(i/200 + 1), Ts: int64(1_700_000_000_000 + i*1000),
			Sender: fmt.Sprintf("user%d", rng.IntN(2000)), Text: strings.Join(text, " ")}
		if i%20 == 0 {
			d.Audience = []string{d.Sender, fmt.Sprintf("user%d", rng.IntN(2000))}
		}
		if err := batch.Put(d); err != nil {
			b.Fatal(err)
		}
		if batch.Size() == 1000 {
			if err := x.Apply(batch); err != nil {
				b.Fatal(err)
			}
			batch = x.NewBatch()
		}
	}
	if err := x.Apply(batch); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return x, float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// BenchmarkIndex_Search measures one partition index's search at
// -search.corpus messages (the search of one replica; a node's answer adds
// the state check of at most limit hits): p50 and p99 over a mix of one
// common word, one rare word, two words, a phrase and a sender filter, each
// with the permission filters of a user who may read 190 of the 200 rooms,
// limit 20. It reports the index's heap bytes per message and how fast it
// was built.
func BenchmarkIndex_Search(b *testing.B) {
	words := benchWords(50_000)
	start := time.Now()
	x, perMsg := buildBenchIndex(b, *benchCorpus, words)
	built := time.Since(start)
	defer func() { _ = x.Close() }()
	var readable, unreadable []string
	for i := range 200 {
		if i%20 == 7 {
			unreadable = append(unreadable, fmt.Sprintf("room%d", i))
		} else {
			readable = append(readable, fmt.Sprintf("room%d", i))
		}
	}
	scope := Scope{User: "user42", Readable: readable, Unreadable: unreadable}
	queries := []Query{
		{Words: []string{words[4]}},
		{Words: []string{words[3000]}},
		{Words: []string{words[5], words[40]}},
		{Phrases: []string{words[4] + " " + words[5]}},
		{Words: []string{words[6]}, From: "user7"},
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, err := x.Search(b.Context(), Spec{Query: queries[i%len(queries)], Limit: 20}, scope); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(perMsg, "heap-B/msg")
	b.ReportMetric(float64(x.DiskBytes())/float64(*benchCorpus), "disk-B/msg")
	b.ReportMetric(float64(*benchCorpus)/built.Seconds(), "indexed-msg/s")
}

// BenchmarkIndex_SmallBatches measures what indexing beside posting costs:
// b.N messages applied in batches of 50, one batch every coalesce (what one
// replica's indexer gathers at 2,000 posts/s over 4 partitions), then the
// index closed, so scorch's background persisting and merging are counted.
// It reports the process's CPU time per message (user and system, every
// goroutine): -benchtime 10000x takes 20 s.
func BenchmarkIndex_SmallBatches(b *testing.B) {
	words := benchWords(50_000)
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 4, uint64(len(words)-1))
	x, err := NewIndex(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	text := make([]string, 12)
	cpu0 := bench.ProcessCPU()
	b.ResetTimer()
	batch := x.NewBatch()
	for i := range b.N {
		for k := range text {
			text[k] = words[zipf.Uint64()]
		}
		d := Doc{Room: fmt.Sprintf("room%d", i%16), Seq: uint64(i/16 + 1), Ts: int64(1_700_000_000_000 + i*1000),
			Sender: fmt.Sprintf("user%d", rng.IntN(200)), Text: strings.Join(text, " ")}
		if err := batch.Put(d); err != nil {
			b.Fatal(err)
		}
		if batch.Size() == 50 || i == b.N-1 {
			if err := x.Apply(batch); err != nil {
				b.Fatal(err)
			}
			batch = x.NewBatch()
			time.Sleep(coalesce)
		}
	}
	if err := x.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64((bench.ProcessCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/msg")
}

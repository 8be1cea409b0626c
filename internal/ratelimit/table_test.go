package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

// t0 is the fake clock's start.
var t0 = time.Unix(1_700_000_000, 0)

func at(d time.Duration) time.Time { return t0.Add(d) }

func testConfig() Config {
	return Config{
		Rates: map[string]Rate{Posts: {N: 3, Per: 3 * time.Second}, RoomCreates: {}},
		Slots: map[string]int{Streams: 2, LongPolls: 0},
	}
}

func TestTable_Take(t *testing.T) {
	t.Run("burst then refusal with the time to one token", func(t *testing.T) {
		tb := NewTable(testConfig())
		for i := range 3 {
			if got, _ := tb.Take(Posts, "ann", 1, t0); got != 1 {
				t.Fatalf("take %d: got %d", i+1, got)
			}
		}
		got, wait := tb.Take(Posts, "ann", 1, t0)
		if got != 0 || wait <= 999*time.Millisecond || wait > time.Second+time.Millisecond {
			t.Fatalf("past the burst: got %d, wait %v; want 0 and 1s", got, wait)
		}
		if got, _ := tb.Take(Posts, "bob", 1, t0); got != 1 {
			t.Fatal("another key was refused")
		}
	})
	t.Run("refills at the rate, up to the burst", func(t *testing.T) {
		tb := NewTable(testConfig())
		tb.Take(Posts, "ann", 3, t0)
		if got, _ := tb.Take(Posts, "ann", 3, at(2*time.Second)); got != 2 {
			t.Fatalf("after 2 s: got %d, want 2", got)
		}
		if got, _ := tb.Take(Posts, "ann", 5, at(time.Hour)); got != 3 {
			t.Fatalf("after an hour: got %d, want the burst 3", got)
		}
	})
	t.Run("partial grant", func(t *testing.T) {
		tb := NewTable(testConfig())
		tb.Take(Posts, "ann", 2, t0)
		if got, wait := tb.Take(Posts, "ann", 4, t0); got != 1 || wait != 0 {
			t.Fatalf("got %d, wait %v; want 1, 0", got, wait)
		}
	})
	t.Run("off and unknown limits grant everything", func(t *testing.T) {
		tb := NewTable(testConfig())
		for _, limit := range []string{RoomCreates, "nonesuch"} {
			for range 100 {
				if got, _ := tb.Take(limit, "ann", 7, t0); got != 7 {
					t.Fatalf("%s: got %d", limit, got)
				}
			}
		}
	})
	t.Run("a clock going back refills nothing", func(t *testing.T) {
		tb := NewTable(testConfig())
		tb.Take(Posts, "ann", 3, at(10*time.Second))
		if got, _ := tb.Take(Posts, "ann", 1, t0); got != 0 {
			t.Fatal("a step back in time gave a token")
		}
		if got, _ := tb.Take(Posts, "ann", 1, at(11*time.Second)); got != 1 {
			t.Fatal("no token a second after the last take")
		}
	})
}

func TestTable_Hold(t *testing.T) {
	t.Run("cap across holders", func(t *testing.T) {
		tb := NewTable(testConfig())
		if !tb.Hold(Streams, "ann", "n1", 1, 1, t0) || !tb.Hold(Streams, "ann", "n2", 1, 1, t0) {
			t.Fatal("refused within the cap")
		}
		if tb.Hold(Streams, "ann", "n3", 1, 1, t0) || tb.Hold(Streams, "ann", "n1", 2, 2, t0) {
			t.Fatal("allowed past the cap")
		}
		if !tb.Hold(Streams, "bob", "n3", 2, 1, t0) {
			t.Fatal("another key was refused")
		}
		if !tb.Hold(Streams, "ann", "n2", 0, 2, t0) || !tb.Hold(Streams, "ann", "n1", 2, 3, t0) {
			t.Fatal("a released slot was not given again")
		}
		if got := tb.Used(Streams, "ann", t0); got != 2 {
			t.Fatalf("Used = %d, want 2", got)
		}
	})
	t.Run("shrinking and renewing are always allowed", func(t *testing.T) {
		tb := NewTable(testConfig())
		tb.Hold(Streams, "ann", "n1", 2, 1, t0)
		if !tb.Hold(Streams, "ann", "n1", 2, 2, t0) || !tb.Hold(Streams, "ann", "n1", 1, 3, t0) {
			t.Fatal("a renewal or shrink was refused")
		}
	})
	t.Run("an older message changes nothing", func(t *testing.T) {
		tb := NewTable(testConfig())
		tb.Hold(Streams, "ann", "n1", 2, 5, t0)
		if !tb.Hold(Streams, "ann", "n1", 1, 4, t0) {
			t.Fatal("a stale claim covered by the newer count was refused")
		}
		if got := tb.Used(Streams, "ann", t0); got != 2 {
			t.Fatalf("a stale claim changed the count to %d", got)
		}
		tb.Hold(Streams, "ann", "n1", 0, 6, t0)
		if tb.Hold(Streams, "ann", "n1", 2, 5, t0) && tb.Used(Streams, "ann", t0) != 0 {
			t.Fatal("a stale claim revived a released count")
		}
	})
	t.Run("a lease lapses without renewal", func(t *testing.T) {
		tb := NewTable(testConfig())
		tb.Hold(Streams, "ann", "dead", 2, 1, t0)
		if tb.Hold(Streams, "ann", "n2", 1, 1, at(DefaultLeaseTTL-time.Millisecond)) {
			t.Fatal("allowed before the lease lapsed")
		}
		if !tb.Hold(Streams, "ann", "n2", 2, 2, at(DefaultLeaseTTL)) {
			t.Fatal("refused after the lease lapsed")
		}
	})
	t.Run("a refused claim does not advance the sequence", func(t *testing.T) {
		tb := NewTable(testConfig())
		tb.Hold(Streams, "ann", "n2", 2, 1, t0)
		if tb.Hold(Streams, "ann", "n1", 1, 9, t0) {
			t.Fatal("allowed past the cap")
		}
		tb.Hold(Streams, "ann", "n2", 0, 2, t0)
		if !tb.Hold(Streams, "ann", "n1", 1, 8, t0) {
			t.Fatal("a claim older than a refused one was treated as stale")
		}
	})
	t.Run("off limits allow everything", func(t *testing.T) {
		tb := NewTable(testConfig())
		for i := range 10 {
			if !tb.Hold(LongPolls, "ann", "n1", i+1, uint64(i+1), t0) || !tb.Hold("nonesuch", "ann", "n1", i+1, uint64(i+1), t0) {
				t.Fatal("refused")
			}
		}
	})
}

// The memory bound forgets buckets that carry no information, then all,
// never refusing a key it has forgotten.
func TestTable_MaxKeys(t *testing.T) {
	cfg := testConfig()
	cfg.MaxKeys = tableShards * 4
	tb := NewTable(cfg)
	for i := range 10_000 {
		key := fmt.Sprint("u", i)
		if got, _ := tb.Take(Posts, key, 1, t0); got != 1 {
			t.Fatalf("key %d refused", i)
		}
		if !tb.Hold(Streams, key, "n1", 1, 1, t0) {
			t.Fatalf("key %d refused a slot", i)
		}
	}
	for i := range tb.shards {
		if n, m := len(tb.shards[i].buckets), len(tb.shards[i].slots); n > 4 || m > 4 {
			t.Fatalf("shard %d holds %d buckets and %d slot sets; want at most 4", i, n, m)
		}
	}
}

// A new owner seeds a key's bucket from a former owner's: never above what
// either holds.
func TestTable_Seed(t *testing.T) {
	old, fresh := NewTable(testConfig()), NewTable(testConfig())
	if fresh.Known(Posts, "ann") || !fresh.Known(RoomCreates, "ann") {
		t.Fatal("Known: a missing bucket is known, or an off limit unknown")
	}
	if _, ok := old.Peek(Posts, "ann", t0); ok {
		t.Fatal("Peek found a bucket that was never used")
	}
	old.Take(Posts, "ann", 2, t0)
	tokens, ok := old.Peek(Posts, "ann", at(500*time.Millisecond))
	if !ok || tokens != 1.5 {
		t.Fatalf("Peek = %v, %v; want 1.5 tokens", tokens, ok)
	}
	if _, ok := old.Peek(Posts, "bob", t0); ok || old.Known(Posts, "bob") {
		t.Fatal("Peek created a bucket")
	}
	fresh.Seed(Posts, "ann", tokens, at(500*time.Millisecond))
	if got, _ := fresh.Take(Posts, "ann", 3, at(500*time.Millisecond)); got != 1 {
		t.Fatalf("after the seed: took %d, want 1", got)
	}
	fresh.Seed(Posts, "ann", 3, at(500*time.Millisecond))
	if got, _ := fresh.Take(Posts, "ann", 3, at(500*time.Millisecond)); got != 0 {
		t.Fatalf("a seed raised the bucket: took %d", got)
	}
}

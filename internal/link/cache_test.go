package link

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func mustCache(t testing.TB, capacity int, p Policy, now func() time.Time) *Cache[string, int] {
	t.Helper()
	c, err := NewCache[string, int](capacity, p, now)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// evictionOrder returns the cached keys (expired or not) in the order they
// would be evicted.
func (c *Cache[K, V]) evictionOrder() []K {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []K
	for b := c.buckets.next; b != &c.buckets; b = b.next {
		for e := b.head.prev; e != &b.head; e = e.prev {
			out = append(out, e.key)
		}
	}
	return out
}

// TestCache_Eviction runs the same accesses under each policy and checks
// which keys are evicted, in order.
func TestCache_Eviction(t *testing.T) {
	// Capacity 3: put a, b, c; read a twice and b once; then put d, e, f.
	cases := []struct {
		policy  Policy
		evicted []string // in order, as d, e and f arrive
	}{
		{FIFO, []string{"a", "b", "c"}}, // insertion order; reads do not matter
		{LRU, []string{"c", "b", "a"}},  // c never read; b last read before a
		{LFU, []string{"c", "d", "e"}},  // c used once; then each newcomer (1 use) before b (2) and a (3)
	}
	for _, tc := range cases {
		t.Run(string(tc.policy), func(t *testing.T) {
			c := mustCache(t, 3, tc.policy, nil)
			for i, k := range []string{"a", "b", "c"} {
				c.Put(k, i, time.Time{})
			}
			for _, k := range []string{"a", "b", "a"} {
				if _, ok := c.Get(k); !ok {
					t.Fatalf("Get(%q) missed", k)
				}
			}
			var evicted []string
			for i, k := range []string{"d", "e", "f"} {
				before := c.evictionOrder()
				c.Put(k, 10+i, time.Time{})
				for _, old := range before {
					if _, ok := c.items[old]; !ok {
						evicted = append(evicted, old)
					}
				}
			}
			if !slices.Equal(evicted, tc.evicted) {
				t.Fatalf("evicted %v, want %v", evicted, tc.evicted)
			}
			if s := c.Stats(); s.Len != 3 || s.Evictions != 3 || s.Hits != 3 || s.Misses != 0 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestCache_PutExisting(t *testing.T) {
	cases := []struct {
		policy  Policy
		evicted string // when a fourth key arrives after re-putting a
	}{
		{FIFO, "a"}, // a keeps its place
		{LRU, "b"},  // re-putting a is a use
		{LFU, "b"},  // a has 2 uses; b and c 1, b older
	}
	for _, tc := range cases {
		t.Run(string(tc.policy), func(t *testing.T) {
			c := mustCache(t, 3, tc.policy, nil)
			c.Put("a", 1, time.Time{})
			c.Put("b", 2, time.Time{})
			c.Put("c", 3, time.Time{})
			c.Put("a", 4, time.Time{})
			if v, _ := c.Get("a"); v != 4 {
				t.Fatalf("a = %d, want 4", v)
			}
			c.Put("a", 5, time.Time{}) // one more use, same outcome for LRU
			c.Put("d", 6, time.Time{})
			if _, ok := c.items[tc.evicted]; ok {
				t.Fatalf("%q still cached; order %v", tc.evicted, c.evictionOrder())
			}
		})
	}
}

func TestCache_Expiry(t *testing.T) {
	now := time.Unix(100, 0)
	clock := func() time.Time { return now }
	for _, p := range []Policy{LRU, LFU, FIFO} {
		t.Run(string(p), func(t *testing.T) {
			c := mustCache(t, 4, p, clock)
			c.Put("k", 1, now.Add(time.Second))
			c.Put("forever", 2, time.Time{})
			if _, ok := c.Get("k"); !ok {
				t.Fatal("fresh entry missed")
			}
			now = now.Add(time.Second)
			if _, ok := c.Get("k"); ok {
				t.Fatal("expired entry hit")
			}
			if _, ok := c.Get("forever"); !ok {
				t.Fatal("entry without expiry missed")
			}
			c.Put("k", 3, now.Add(time.Second))
			if v, ok := c.Get("k"); !ok || v != 3 {
				t.Fatalf("refreshed entry = (%d, %v)", v, ok)
			}
			c.Delete("k")
			c.Delete("missing")
			if _, ok := c.Get("k"); ok {
				t.Fatal("deleted entry hit")
			}
			if s := c.Stats(); s.Hits != 3 || s.Misses != 2 || s.Len != 1 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestNewCache_BadPolicy(t *testing.T) {
	if _, err := NewCache[string, int](1, "random", nil); err == nil {
		t.Fatal("accepted policy random")
	}
	if _, err := ParsePolicy("LRU"); err == nil {
		t.Fatal("policies are lowercase")
	}
}

// TestCache_Invariants checks the buckets after a mixed workload of puts,
// gets and deletes from concurrent users, under the race detector.
func TestCache_Invariants(t *testing.T) {
	for _, p := range []Policy{LRU, LFU, FIFO} {
		t.Run(string(p), func(t *testing.T) {
			c := mustCache(t, 50, p, nil)
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					for i := range 2000 {
						k := fmt.Sprint((i*7 + w*13) % 120)
						switch i % 5 {
						case 0, 1:
							c.Put(k, i, time.Time{})
						case 4:
							c.Delete(k)
						default:
							c.Get(k)
						}
					}
				})
			}
			wg.Wait()
			c.mu.Lock()
			defer c.mu.Unlock()
			n, buckets := 0, 0
			var last uint64
			for b := c.buckets.next; b != &c.buckets; b = b.next {
				buckets++
				if b.uses <= last || b.head.next == &b.head {
					t.Fatalf("bucket %d (uses %d after %d) out of order or empty", buckets, b.uses, last)
				}
				last = b.uses
				for e := b.head.next; e != &b.head; e = e.next {
					if e.bucket != b || e.next.prev != e || c.items[e.key] != e {
						t.Fatalf("entry %v misplaced", e.key)
					}
					n++
				}
			}
			if n != len(c.items) || n > 50 {
				t.Fatalf("%d entries in buckets, %d in the map", n, len(c.items))
			}
			if p != LFU && buckets > 1 {
				t.Fatalf("%s uses %d buckets", p, buckets)
			}
		})
	}
}

func BenchmarkCache_Get(b *testing.B) {
	for _, p := range []Policy{LRU, LFU, FIFO} {
		b.Run(string(p), func(b *testing.B) {
			c := mustCache(b, 10000, p, nil)
			keys := make([]string, 10000)
			for i := range keys {
				keys[i] = fmt.Sprint(i)
				c.Put(keys[i], i, time.Time{})
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c.Get(keys[i%len(keys)])
				i++
			}
		})
	}
}

// TestCache_ConcurrentHits reads a hot key from many goroutines while
// others are put and read (so the hot key is not always the newest): every
// read of the hot key hits and is counted.
func TestCache_ConcurrentHits(t *testing.T) {
	for _, p := range []Policy{LRU, LFU, FIFO} {
		t.Run(string(p), func(t *testing.T) {
			c := mustCache(t, 64, p, nil)
			c.Put("hot", 1, time.Time{})
			const workers, reads = 8, 2000
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range reads {
						if w == 0 && i%4 == 0 {
							c.Put(fmt.Sprintf("k%d", i%16), i, time.Time{})
						}
						if v, ok := c.Get("hot"); !ok || v != 1 {
							t.Errorf("Get(hot) = %d, %v", v, ok)
							return
						}
					}
				}()
			}
			wg.Wait()
			if st := c.Stats(); st.Hits != workers*reads || st.Misses != 0 {
				t.Fatalf("stats %+v, want %d hits and no miss", st, workers*reads)
			}
		})
	}
}

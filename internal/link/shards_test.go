package link

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestShardCount(t *testing.T) {
	for _, tc := range []struct{ size, want int }{
		{0, 1}, {1, 1}, {127, 1}, {128, 2}, {255, 2}, {256, 4}, {10_000, 16}, {100_000, 16},
	} {
		if got := shardCount(tc.size); got != tc.want {
			t.Errorf("shardCount(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

// TestShardedCache: every key is found in the shard it was put in, the
// stats add up over the shards, and the capacity is shared among them.
func TestShardedCache(t *testing.T) {
	c, err := newShardedCache[int](1024, LRU, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.shards) != 16 {
		t.Fatalf("%d shards, want 16", len(c.shards))
	}
	for i := range 500 {
		c.shard(fmt.Sprint(i)).Put(fmt.Sprint(i), i, time.Time{})
	}
	for i := range 500 {
		if v, ok := c.Get(fmt.Sprint(i)); !ok || v != i {
			t.Fatalf("Get(%d) = %d, %v", i, v, ok)
		}
	}
	c.Delete("7")
	if _, ok := c.Get("7"); ok {
		t.Fatal("deleted key found")
	}
	st := c.Stats()
	if st.Hits != 500 || st.Misses != 1 || st.Len != 499 {
		t.Fatalf("stats %+v", st)
	}
	for i := range 5000 {
		c.shard(fmt.Sprint(i)).Put(fmt.Sprint(i), i, time.Time{})
	}
	if st := c.Stats(); st.Len != 1024 {
		t.Fatalf("%d entries in a cache of 1024", st.Len)
	}
}

// TestCache_PutUnlessDeleted: a value read before a Delete is not stored
// after it.
func TestCache_PutUnlessDeleted(t *testing.T) {
	c := mustCache(t, 4, LRU, nil)
	d := c.Deletes()
	if !c.PutUnlessDeleted("a", 1, time.Time{}, d) {
		t.Fatal("nothing deleted, yet not stored")
	}
	d = c.Deletes()
	c.Delete("b") // any key: the value read may be older than this
	if c.PutUnlessDeleted("a", 2, time.Time{}, d) {
		t.Fatal("stored over a Delete since the read")
	}
	if v, _ := c.Get("a"); v != 1 {
		t.Fatalf("a = %d, want the value from before", v)
	}
}

// TestVisitCounter_Shards: visits of many links spread over the shards
// come back in one take, restore puts them back, and flushed finds the
// unflushed visits of limited links in their shards.
func TestVisitCounter_Shards(t *testing.T) {
	c := newVisitCounter(DefaultMaxPendingVisits)
	if len(c.shards) != maxShards {
		t.Fatalf("%d shards, want %d", len(c.shards), maxShards)
	}
	human := visitor{browser: BrowserChrome, system: SystemLinux}
	var totals []CodeHits
	for i := range 200 {
		code := fmt.Sprintf("c%d", i)
		for range i%3 + 1 {
			if !c.count(code, human, 1, 1000) {
				t.Fatalf("%s refused below its limit", code)
			}
		}
		totals = append(totals, CodeHits{Code: code, N: uint64(i%3 + 1)})
	}
	p := c.take()
	if len(p) != 200 {
		t.Fatalf("take: %d counters, want 200", len(p))
	}
	c.restore(p)
	if again := c.take(); len(again) != 200 {
		t.Fatalf("take after restore: %d counters, want 200", len(again))
	}
	if limited := c.flushed(totals); len(limited) != 200 {
		t.Fatalf("flushed: %d limited links, want 200", len(limited))
	}
	if limited := c.flushed(totals); len(limited) != 0 {
		t.Fatalf("flushed twice: %d limited links still unflushed", len(limited))
	}
}

// TestVisitCounter_ConcurrentVisitsAllCounted counts visits of one hot
// link from many goroutines while flushes take the counters: every visit
// is in exactly one take.
func TestVisitCounter_ConcurrentVisitsAllCounted(t *testing.T) {
	c := newVisitCounter(DefaultMaxPendingVisits)
	kinds := []visitor{{browser: BrowserChrome, system: SystemLinux}, {bot: true}}
	const workers, visits = 8, 2000
	totals := map[visitKey]uint64{}
	addAll := func(p map[visitKey]uint64) {
		for k, n := range p {
			totals[k] += n
		}
	}
	stop := make(chan struct{})
	flushed := make(chan struct{})
	go func() { // the flusher
		defer close(flushed)
		for {
			select {
			case <-stop:
				return
			default:
				addAll(c.take())
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range visits {
				c.count("hot", kinds[w%2], 1, 0)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-flushed
	addAll(c.take())
	var sum uint64
	for k, n := range totals {
		if k.code != "hot" {
			t.Fatalf("a counter of %q", k.code)
		}
		sum += n
	}
	if sum != workers*visits || len(totals) != 2 {
		t.Fatalf("%d visits in %d counters, want %d in 2", sum, len(totals), workers*visits)
	}
}

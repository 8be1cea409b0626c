package account

import (
	"testing"
	"time"
)

func TestSessionCache(t *testing.T) {
	c := newSessionCache(500*time.Millisecond, 2*cacheShards)
	t0 := time.Unix(1000, 0)
	d := digestOf(0)
	c.put(d, cachedSession{username: "alice", expiresMs: 1}, t0)
	if e, ok := c.get(d, t0.Add(499*time.Millisecond)); !ok || e.username != "alice" {
		t.Fatalf("get before the TTL = (%+v, %v)", e, ok)
	}
	if _, ok := c.get(d, t0.Add(500*time.Millisecond)); ok {
		t.Fatal("entry outlived its TTL, counted from the read's start")
	}
	c.forget(d)
	if c.len() != 0 {
		t.Fatalf("len after forget = %d", c.len())
	}
	// Every digest below lands in shard 0, which holds 2 entries.
	for i := range 10 {
		var d [TokenHashLen]byte
		d[0], d[1] = 0, byte(i)
		c.put(d, cachedSession{}, t0.Add(time.Duration(i)*time.Second))
	}
	if n := c.len(); n != 2 {
		t.Fatalf("shard holds %d entries, want its cap 2", n)
	}
	if hits, misses := c.stats(); hits != 1 || misses != 1 {
		t.Fatalf("stats = %d hits, %d misses", hits, misses)
	}
}

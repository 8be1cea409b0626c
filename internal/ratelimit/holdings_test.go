package ratelimit

import (
	"testing"
	"time"
)

// node is one requesting node in a simulation: its Holdings, talking to a
// shared owner Table.
type node struct {
	name string
	h    *Holdings
	tb   *Table
}

func (n node) acquire(now time.Time) bool {
	c, local := n.h.Reserve(Streams, "ann", now)
	if local {
		return true
	}
	ok := n.tb.Hold(c.Limit, c.Key, n.name, c.N, c.Seq, now)
	n.h.Acquired(c, ok, now)
	return ok
}

func (n node) sync(now time.Time) {
	for _, c := range n.h.Due(now) {
		n.h.Synced(c, n.tb.Hold(c.Limit, c.Key, n.name, c.N, c.Seq, now))
	}
}

func TestHoldings_Reserve(t *testing.T) {
	tb := NewTable(Config{Slots: map[string]int{Streams: 3}})
	a, b := node{"a", NewHoldings(), tb}, node{"b", NewHoldings(), tb}
	t.Run("the cap holds across nodes", func(t *testing.T) {
		if !a.acquire(t0) || !a.acquire(t0) || !b.acquire(t0) {
			t.Fatal("refused within the cap")
		}
		if b.acquire(t0) || a.acquire(t0) {
			t.Fatal("allowed past the cap")
		}
		if a.h.InUse(Streams, "ann") != 2 || b.h.InUse(Streams, "ann") != 1 {
			t.Fatal("a refused reservation was kept")
		}
	})
	t.Run("a released slot is taken back locally until it settles", func(t *testing.T) {
		a.h.Release(Streams, "ann", t0)
		if b.acquire(t0) {
			t.Fatal("b got a slot a still holds")
		}
		c, local := a.h.Reserve(Streams, "ann", t0)
		if !local {
			t.Fatalf("a asked the owner (%+v) for a slot it holds", c)
		}
	})
	t.Run("a settled release goes back to the owner", func(t *testing.T) {
		a.h.Release(Streams, "ann", at(time.Second))
		a.sync(at(time.Second + Settle/2))
		if b.acquire(at(time.Second + Settle/2)) {
			t.Fatal("the release reached the owner before it settled")
		}
		a.sync(at(time.Second + Settle))
		if !b.acquire(at(time.Second + Settle)) {
			t.Fatal("b did not get the settled slot")
		}
	})
	t.Run("renewals keep counts alive; a dead node's lapse", func(t *testing.T) {
		now := at(2 * time.Second)
		for range 10 {
			now = now.Add(Renew)
			b.sync(now) // a is dead: it never renews
		}
		if got := tb.Used(Streams, "ann", now); got != 2 {
			t.Fatalf("the owner counts %d slots, want b's 2", got)
		}
		if !b.acquire(now) {
			t.Fatal("a dead node's slots did not come back")
		}
	})
}

// An answer to an older claim arriving after a newer one's does not
// overwrite the newer count.
func TestHoldings_OutOfOrderAnswers(t *testing.T) {
	h := NewHoldings()
	c1, _ := h.Reserve(Streams, "ann", t0)
	c2, _ := h.Reserve(Streams, "ann", t0)
	h.Acquired(c2, true, t0)
	h.Acquired(c1, true, t0)
	if c, local := h.Reserve(Streams, "ann", t0); local {
		t.Fatal("reserved locally past the granted count")
	} else if c.N != 3 {
		t.Fatalf("claim of %d, want 3", c.N)
	}
}

func TestHoldings_Due(t *testing.T) {
	h := NewHoldings()
	c, _ := h.Reserve(Streams, "ann", t0)
	h.Acquired(c, true, t0)
	if got := h.Due(at(Renew - time.Millisecond)); len(got) != 0 {
		t.Fatalf("due before renewal: %+v", got)
	}
	got := h.Due(at(Renew))
	if len(got) != 1 || got[0].N != 1 || got[0].Seq <= c.Seq {
		t.Fatalf("renewal claims %+v", got)
	}
	h.Resend(got[0])
	if again := h.Due(at(Renew)); len(again) != 1 || again[0].Seq <= got[0].Seq {
		t.Fatalf("an undelivered claim is not due again: %+v", again)
	}
	h.Release(Streams, "ann", at(Renew))
	last := h.Due(at(Renew + Settle))
	if len(last) != 1 || last[0].N != 0 {
		t.Fatalf("release claims %+v", last)
	}
	h.Synced(last[0], true)
	if h.InUse(Streams, "ann") != 0 || len(h.m) != 0 {
		t.Fatal("a fully released key is still tracked")
	}
}

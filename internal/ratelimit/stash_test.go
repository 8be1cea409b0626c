package ratelimit

import (
	"testing"
	"time"
)

func TestStash_Spend(t *testing.T) {
	cfg := Config{Rates: map[string]Rate{Posts: {N: 160, Per: time.Second}}} // batches of up to 10
	t.Run("an unknown key asks for one", func(t *testing.T) {
		s := NewStash(cfg)
		if ok, wait, want := s.Spend(Posts, "ann", t0); ok || wait != 0 || want != 1 {
			t.Fatalf("Spend = %v, %v, %d; want false, 0, 1", ok, wait, want)
		}
	})
	t.Run("batches grow while the key keeps running dry, up to the cap", func(t *testing.T) {
		s := NewStash(cfg)
		now := t0
		var wants []int
		for range 6 {
			_, _, want := s.Spend(Posts, "ann", now)
			wants = append(wants, want)
			s.Fill(Posts, "ann", want, want, 0, now)
			for range want - 1 {
				if ok, _, _ := s.Spend(Posts, "ann", now); !ok {
					t.Fatal("a stashed token was not there")
				}
			}
			now = now.Add(10 * time.Millisecond)
		}
		if got := []int{1, 1, 2, 4, 8, 10}; !equal(wants, got) {
			t.Fatalf("batches %v, want %v", wants, got)
		}
	})
	t.Run("after a pause the batch is one again", func(t *testing.T) {
		s := NewStash(cfg)
		s.Fill(Posts, "ann", 1, 1, 0, t0)
		s.Fill(Posts, "ann", 1, 1, 0, t0)
		if _, _, want := s.Spend(Posts, "ann", t0); want != 2 {
			t.Fatalf("want %d, want 2", want)
		}
		s.Fill(Posts, "ann", 2, 2, 0, at(StashTTL))
		s.Spend(Posts, "ann", at(StashTTL))
		if _, _, want := s.Spend(Posts, "ann", at(StashTTL)); want != 1 {
			t.Fatalf("after a pause: want %d, want 1", want)
		}
	})
	t.Run("stashed tokens lapse", func(t *testing.T) {
		s := NewStash(cfg)
		s.Fill(Posts, "ann", 4, 4, 0, t0)
		if ok, _, _ := s.Spend(Posts, "ann", at(StashTTL)); ok {
			t.Fatal("a lapsed token was spent")
		}
	})
	t.Run("a refusal is remembered until the owner's hint", func(t *testing.T) {
		s := NewStash(cfg)
		s.Fill(Posts, "ann", 1, 0, 300*time.Millisecond, t0)
		if ok, wait, _ := s.Spend(Posts, "ann", at(100*time.Millisecond)); ok || wait != 200*time.Millisecond {
			t.Fatalf("Spend = %v, %v; want a local refusal for 200ms", ok, wait)
		}
		if ok, wait, want := s.Spend(Posts, "ann", at(300*time.Millisecond)); ok || wait != 0 || want != 1 {
			t.Fatalf("after the hint: %v, %v, %d; want to ask for 1", ok, wait, want)
		}
	})
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Nodes that take tokens in batches from one owner never spend more than
// the owner's bucket gives, however requests spread over them: the cap
// holds cluster-wide.
func TestStash_NeverExceedsTheOwner(t *testing.T) {
	r := Rate{N: 64, Per: 10 * time.Second}
	cfg := Config{Rates: map[string]Rate{Posts: r}}
	owner := NewTable(cfg)
	nodes := []*Stash{NewStash(cfg), NewStash(cfg), NewStash(cfg)}
	allowed, asks := 0, 0
	now := t0
	const steps = 3000 // 30 s, a request every 10 ms
	for i := range steps {
		s := nodes[i%len(nodes)]
		ok, wait, want := s.Spend(Posts, "ann", now)
		if !ok && wait == 0 {
			asks++
			got, w := owner.Take(Posts, "ann", want, now)
			s.Fill(Posts, "ann", want, got, w, now)
			ok = got > 0
		}
		if ok {
			allowed++
		}
		now = now.Add(10 * time.Millisecond)
	}
	limit := r.N + int(float64(r.N)*float64(steps*10*time.Millisecond)/float64(r.Per))
	if allowed > limit {
		t.Fatalf("%d allowed in 30 s; the owner's bucket gives at most %d", allowed, limit)
	}
	if allowed < limit*3/4 {
		t.Fatalf("only %d allowed of the %d the bucket gives", allowed, limit)
	}
	if asks >= steps/2 {
		t.Fatalf("%d asks for %d requests: refusals and batches should spare most", asks, steps)
	}
	t.Logf("%d of %d requests allowed (bucket: %d), %d asks of the owner", allowed, steps, limit, asks)
}

package clock

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeSources is a wall clock and a monotonic clock the test moves.
type fakeSources struct {
	wall time.Time
	mono time.Duration
}

func (f *fakeSources) advance(d time.Duration) { f.wall, f.mono = f.wall.Add(d), f.mono+d }

func newFake(t *testing.T) (*Clock, *fakeSources, *[]time.Duration) {
	t.Helper()
	f := &fakeSources{wall: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
	var jumps []time.Duration
	c := newClock(func() time.Time { return f.wall }, func() time.Duration { return f.mono }, func(d time.Duration) { jumps = append(jumps, d) })
	return c, f, &jumps
}

func TestClock_FollowsASteadyWallClock(t *testing.T) {
	c, f, jumps := newFake(t)
	for range 100 {
		f.advance(37 * time.Millisecond)
		if got := c.Now(); !got.Equal(f.wall) {
			t.Fatalf("Now = %v, want the wall clock %v", got, f.wall)
		}
	}
	if len(*jumps) != 0 {
		t.Fatalf("jumps reported for a steady clock: %v", *jumps)
	}
}

func TestClock_JumpsAreNotFollowed(t *testing.T) {
	for _, jump := range []time.Duration{5 * time.Minute, -5 * time.Minute} {
		t.Run(jump.String(), func(t *testing.T) {
			c, f, jumps := newFake(t)
			f.advance(time.Second)
			before := c.Now()
			f.wall = f.wall.Add(jump)
			f.advance(time.Second)
			got := c.Now()
			// One second passed by the monotonic clock: the clock moved one
			// second, give or take MaxSlew of it towards the wall clock.
			if d := got.Sub(before); d < time.Second-2*time.Millisecond || d > time.Second+2*time.Millisecond {
				t.Fatalf("after a %v jump the clock moved %v in one second", jump, d)
			}
			if len(*jumps) != 1 || (*jumps)[0] < jump-2*time.Second || (*jumps)[0] > jump+2*time.Second {
				t.Fatalf("jumps reported %v, want one of about %v", *jumps, jump)
			}
			for range 10 {
				f.advance(time.Second)
				c.Now()
			}
			if len(*jumps) != 1 {
				t.Fatalf("the same jump reported again: %v", *jumps)
			}
		})
	}
}

func TestClock_SlewsTowardsTheWallClock(t *testing.T) {
	c, f, jumps := newFake(t)
	f.wall = f.wall.Add(200 * time.Millisecond) // a small step, as NTP's first sync
	var got time.Time
	for range 400 { // 400 s: 400 ms of slew at most, enough to close 200 ms
		f.advance(time.Second)
		got = c.Now()
	}
	if !got.Equal(f.wall) {
		t.Fatalf("after 400 s the clock is %v off the wall clock, want 0", f.wall.Sub(got))
	}
	if len(*jumps) != 0 {
		t.Fatalf("a 200 ms step was reported as a jump: %v", *jumps)
	}
}

func TestClock_NeverGoesBackwards(t *testing.T) {
	c, f, _ := newFake(t)
	prev := c.Now()
	for i := range 1000 {
		f.advance(time.Millisecond)
		if i%100 == 0 {
			f.wall = f.wall.Add(-10 * time.Second)
		}
		now := c.Now()
		if now.Before(prev) {
			t.Fatalf("step %d: Now went back from %v to %v", i, prev, now)
		}
		prev = now
	}
}

func TestClock_JumpReportedAgainAfterHealing(t *testing.T) {
	c, f, jumps := newFake(t)
	f.wall = f.wall.Add(2 * time.Second)
	f.advance(Resync)
	c.Now()
	f.wall = f.wall.Add(-2 * time.Second) // set right again
	f.advance(Resync)
	c.Now()
	f.wall = f.wall.Add(3 * time.Second)
	f.advance(Resync)
	c.Now()
	if len(*jumps) != 2 {
		t.Fatalf("jumps reported %v, want two", *jumps)
	}
}

func TestNew_StartsAtTheWallClock(t *testing.T) {
	c := New(nil)
	if d := time.Since(c.Now()); d < -time.Second || d > time.Second {
		t.Fatalf("a new clock is %v off time.Now", d)
	}
}

func TestClock_CorrectFollowsTheWallClockPlusTheCorrection(t *testing.T) {
	c, f, jumps := newFake(t)
	c.Now()
	c.Correct(-10 * time.Minute) // the wall clock is 10 minutes ahead of the cluster's
	for range 100 {
		f.advance(time.Second)
		if got, want := c.Now(), f.wall.Add(-10*time.Minute); !got.Equal(want) {
			t.Fatalf("Now = %v, want the corrected wall clock %v", got, want)
		}
	}
	f.wall = f.wall.Add(-10 * time.Minute) // the machine's clock set right: a jump
	f.advance(time.Second)
	if got, want := c.Now(), f.wall; got.Sub(want) > time.Second || want.Sub(got) > time.Second {
		t.Fatalf("Now = %v after the wall clock was set right, want about %v", got, want)
	}
	if len(*jumps) != 1 {
		t.Fatalf("jumps reported %v, want one (setting the wall clock right)", *jumps)
	}
}

func TestClock_ReadsTheWallClockOncePerResync(t *testing.T) {
	f := &fakeSources{wall: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
	reads := 0
	c := newClock(func() time.Time { reads++; return f.wall }, func() time.Duration { return f.mono }, nil)
	start := f.wall
	reads = 0
	// Within Resync the clock adds the monotonic time elapsed and does not
	// see the wall clock move.
	f.mono += Resync / 2
	f.wall = f.wall.Add(time.Hour)
	if got, want := c.Now(), start.Add(Resync/2); !got.Equal(want) || reads != 0 {
		t.Fatalf("within Resync: Now = %v after %d wall clock reads, want %v after none", got, reads, want)
	}
	// Past it, the clock reads the wall clock and slews towards it.
	f.mono += Resync / 2
	want := start.Add(Resync).Add(time.Duration(float64(Resync) * MaxSlew))
	if got := c.Now(); !got.Equal(want) || reads != 1 {
		t.Fatalf("after Resync: Now = %v after %d wall clock reads, want %v after one", got, reads, want)
	}
}

func TestClock_NeverGoesBackBetweenCallers(t *testing.T) {
	c := New(nil)
	var seen atomic.Int64 // the latest time any caller got back
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20000 {
				before := seen.Load()
				now := c.Now().UnixNano()
				if now < before {
					t.Errorf("Now = %d after another caller got %d", now, before)
					return
				}
				for {
					s := seen.Load()
					if now <= s || seen.CompareAndSwap(s, now) {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestClock_SlewingBackNeverUndoesATimeReturned(t *testing.T) {
	c, f, _ := newFake(t)
	f.wall = f.wall.Add(-500 * time.Millisecond) // the wall clock is behind: slew back
	// The last call before a resync returns the monotonic time alone; the
	// resync then takes MaxSlew of the window back, more than the 1 µs that
	// passed.
	f.mono += Resync - time.Microsecond
	before := c.Now()
	f.mono += time.Microsecond
	if after := c.Now(); after.Before(before) {
		t.Fatalf("Now went back from %v to %v at a resync", before, after)
	}
}

// BenchmarkClock_Now reads the clock from every core at once, as a node's
// request handlers do.
func BenchmarkClock_Now(b *testing.B) {
	c := New(nil)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Now()
		}
	})
}

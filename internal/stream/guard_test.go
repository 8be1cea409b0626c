package stream

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/poll"
)

// fakeSessions is a GuardConfig.Check over a table of refused tokens; it
// counts the checks of each token.
type fakeSessions struct {
	mu      sync.Mutex
	refused map[string]error
	checks  map[string]int
}

func newFakeSessions() *fakeSessions {
	return &fakeSessions{refused: map[string]error{}, checks: map[string]int{}}
}

func (f *fakeSessions) Check(_ context.Context, token string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks[token]++
	return f.refused[token]
}

func (f *fakeSessions) refuse(token string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refused[token] = err
}

func (f *fakeSessions) count(token string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checks[token]
}

// ender is a stream's end function; calling it twice panics.
type ender struct {
	ch chan struct{}
}

func newEnder() *ender { return &ender{ch: make(chan struct{})} }

func (e *ender) end() { close(e.ch) }

func (e *ender) ended() bool {
	select {
	case <-e.ch:
		return true
	default:
		return false
	}
}

// wait waits for the end, at most within, and returns how long it took.
func (e *ender) wait(t *testing.T, what string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-e.ch:
		return time.Since(start)
	case <-time.After(within):
		t.Fatalf("%s: not ended within %v", what, within)
		return 0
	}
}

func TestGuard_Revoke(t *testing.T) {
	g := NewGuard(GuardConfig{Check: newFakeSessions().Check, Interval: time.Hour})
	a1, a2, b := newEnder(), newEnder(), newEnder()
	stopA1 := g.Watch("a", time.Time{}, a1.end)
	g.Watch("a", time.Time{}, a2.end)
	stopB := g.Watch("b", time.Time{}, b.end)
	if tokens, streams := g.Watching(); tokens != 2 || streams != 3 {
		t.Fatalf("watching %d tokens, %d streams; want 2, 3", tokens, streams)
	}
	g.Revoke("a")
	if !a1.ended() || !a2.ended() || b.ended() {
		t.Fatalf("after Revoke(a): a1 %v, a2 %v, b %v; want a's streams ended at once, b open", a1.ended(), a2.ended(), b.ended())
	}
	stopA1() // after the end: nothing happens
	g.Revoke("a")
	if tokens, streams := g.Watching(); tokens != 1 || streams != 1 {
		t.Fatalf("watching %d tokens, %d streams; want b alone", tokens, streams)
	}
	a3 := newEnder()
	g.Watch("a", time.Time{}, a3.end)
	stopB()
	g.Revoke("b") // stopped: its end is not called again (it would panic)
	g.Revoke("a")
	if !a3.ended() {
		t.Fatal("a stream watched after a revocation was not ended by the next one")
	}
}

// Each distinct token is checked once per round, however many streams it
// holds; a refused one ends its streams, a failing check ends nothing.
func TestGuard_Recheck(t *testing.T) {
	sessions := newFakeSessions()
	g := NewGuard(GuardConfig{Check: sessions.Check, Interval: 10 * time.Millisecond})
	var as []*ender
	for range 3 {
		e := newEnder()
		as = append(as, e)
		defer g.Watch("a", time.Time{}, e.end)()
	}
	b, c := newEnder(), newEnder()
	defer g.Watch("b", time.Time{}, b.end)()
	defer g.Watch("c", time.Time{}, c.end)()
	sessions.refuse("c", errs.New(errs.Unavailable, "no quorum"))
	poll.Until(t, 10*time.Second, "five checks of b", func() bool { return sessions.count("b") >= 5 })
	if na, nb := sessions.count("a"), sessions.count("b"); na < nb-1 || na > nb+1 {
		t.Fatalf("a (3 streams) checked %d times, b (1 stream) %d: want one check per token per round", na, nb)
	}
	sessions.refuse("a", errs.New(errs.Unauthorized, "invalid or expired session token"))
	for i, e := range as {
		e.wait(t, "a's stream "+string(rune('1'+i)), 10*time.Second)
	}
	checked := sessions.count("c")
	poll.Until(t, 10*time.Second, "two more checks of c", func() bool { return sessions.count("c") >= checked+2 })
	if b.ended() || c.ended() {
		t.Fatalf("b ended %v, c ended %v: want both open (valid; check failing)", b.ended(), c.ended())
	}
}

// A stream ends at its session's expiry, by a timer.
func TestGuard_Expiry(t *testing.T) {
	g := NewGuard(GuardConfig{Check: newFakeSessions().Check, Interval: time.Hour})
	const ttl = 150 * time.Millisecond
	start := time.Now()
	a, b, past := newEnder(), newEnder(), newEnder()
	g.Watch("a", start.Add(ttl), a.end)
	g.Watch("b", time.Time{}, b.end)
	g.Watch("past", start.Add(-time.Second), past.end)
	past.wait(t, "a stream whose session had expired", 5*time.Second)
	a.wait(t, "a stream at its session's expiry", 5*time.Second)
	if d := time.Since(start); d < ttl {
		t.Fatalf("ended %v after the watch, before the %v expiry", d, ttl)
	}
	if b.ended() {
		t.Fatal("a stream without a known expiry ended")
	}
	if tokens, _ := g.Watching(); tokens != 1 {
		t.Fatalf("watching %d tokens, want b alone", tokens)
	}
}

// The check loop runs only while a stream is watched.
func TestGuard_Watch(t *testing.T) {
	sessions := newFakeSessions()
	g := NewGuard(GuardConfig{Check: sessions.Check, Interval: 5 * time.Millisecond})
	running := func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.running
	}
	stop := g.Watch("a", time.Now().Add(time.Hour), newEnder().end)
	poll.Until(t, 10*time.Second, "a check", func() bool { return sessions.count("a") > 0 })
	stop()
	poll.Until(t, 10*time.Second, "the loop stopping", func() bool { return !running() })
	if tokens, streams := g.Watching(); tokens != 0 || streams != 0 {
		t.Fatalf("watching %d tokens, %d streams after stop", tokens, streams)
	}
	e := newEnder()
	defer g.Watch("b", time.Time{}, e.end)()
	if !running() {
		t.Fatal("the loop did not start again with a new stream")
	}
	sessions.refuse("b", errs.New(errs.Unauthorized, "gone"))
	e.wait(t, "b's stream", 10*time.Second)
}

package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// MaxSlew is the fastest the clock follows the wall clock when the two
// differ: 1 ms per second of elapsed time. NTP slews by at most 0.5 ms
// per second, so a wall clock kept by NTP is followed exactly.
const MaxSlew = 0.001

// JumpThreshold is the difference between the wall clock and the clock
// that counts as a jump and is reported.
const JumpThreshold = time.Second

// OffsetFileEnv names the environment variable holding the path of the
// file whose content (a Go duration such as "5m" or "-90s") is added to
// the wall clock, in binaries built with the failpoints tag only. The file
// is read again at most every 50 ms; a missing or empty file means
// no offset.
const OffsetFileEnv = "PARLEY_FAILPOINT_CLOCK_OFFSET_FILE"

// Resync is how long the clock runs on the monotonic clock alone between
// two readings of the wall clock: Now reads the wall clock, slews towards
// it and checks for a jump at most this often, and otherwise only adds
// the monotonic time elapsed since. Within it the clock is at most
// MaxSlew × Resync (10 µs) from where slewing on every call would put it.
const Resync = 10 * time.Millisecond

// Clock keeps a node's time: the wall clock at start, carried forward by
// the monotonic clock and slewed towards the wall clock (doc.go). Its Now
// never goes backwards, but by Correct. It is safe for concurrent use.
//
// Now is called on every request a node serves, from every core at once,
// so it neither takes a lock nor writes to memory that callers share: it
// reads the current span (one atomic load) and adds the monotonic time
// elapsed since the span's start. Only the call that finds the span over
// takes the lock, reads the wall clock and starts the next span, once per
// Resync.
type Clock struct {
	wall   func() time.Time     // the wall clock (no monotonic reading)
	mono   func() time.Duration // the monotonic clock, from any origin
	onJump func(wallAhead time.Duration)

	span atomic.Pointer[span] // replaced, never changed, under mu

	mu     sync.Mutex
	jumped bool // a jump was reported and has not healed
	// corrected is what Correct added: the wall clock plus corrected is
	// the time the clock follows.
	corrected time.Duration
}

// span is a stretch of the monotonic clock, at most Resync long, over
// which the clock's time is base plus the monotonic time since monoBase.
//
// Now never goes backwards because each span starts no earlier than the
// time at the end of the one before (resync): a caller that read the
// monotonic clock within a span returned less than that, and a caller that
// read it past the span's end does not use the span.
type span struct {
	base     time.Time     // the clock's time at monoBase
	monoBase time.Duration // the monotonic reading the span starts at
}

// at returns the clock's time at the monotonic reading mono, and whether
// mono falls within the span.
func (s *span) at(mono time.Duration) (time.Time, bool) {
	elapsed := mono - s.monoBase
	return s.base.Add(elapsed), elapsed >= 0 && elapsed < Resync
}

// New returns a clock that starts at the wall clock now. onJump, if not
// nil, is called when the wall clock first differs from the clock by more
// than JumpThreshold, with how far it is ahead (negative: behind), and
// again only after the two came back together and parted again. It is
// called with the clock's lock held: it must be quick and must not call
// Now.
func New(onJump func(wallAhead time.Duration)) *Clock {
	start := time.Now()
	return newClock(wallClock, func() time.Duration { return time.Since(start) }, onJump)
}

// newClock returns a clock reading the given sources (tests drive them).
func newClock(wall func() time.Time, mono func() time.Duration, onJump func(time.Duration)) *Clock {
	c := &Clock{wall: wall, mono: mono, onJump: onJump}
	c.span.Store(&span{base: wall(), monoBase: mono()})
	return c
}

// Now returns the node's time.
func (c *Clock) Now() time.Time {
	// The span first, then the monotonic clock: a reading taken after a
	// newer span started is past this span's end and is not used with it.
	s := c.span.Load()
	if t, ok := s.at(c.mono()); ok {
		return t
	}
	return c.resync()
}

// resync is Now when the span is over: it reads the wall clock, slews
// towards it, reports a jump and starts the next span.
func (c *Clock) resync() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	wall, mono := c.wall().Add(c.corrected), c.mono()
	s := c.span.Load()
	est, ok := s.at(mono)
	if ok { // another call started this span after ours ended
		return est
	}
	elapsed := mono - s.monoBase
	diff := wall.Sub(est)
	step := time.Duration(float64(elapsed) * MaxSlew)
	switch {
	case diff > step:
		est = est.Add(step)
	case diff < -step:
		est = est.Add(-step)
	default:
		est = wall
	}
	c.noteJump(diff)
	// Not before the end of the span: callers within it may have returned
	// up to that.
	if end := s.base.Add(Resync); est.Before(end) {
		est = end
	}
	c.span.Store(&span{base: est, monoBase: mono})
	return est
}

// Correct moves the clock by d (positive: forward), as the node's peers
// measured it off theirs: from then on it follows the wall clock plus d
// (the wall clock set right later is a jump, reported and not followed).
// It is the one way Now goes backwards: a node corrects its clock once, at
// start, before it stamps anything that matters (and every replica keeps
// its group's time monotonic whatever a leader stamps).
func (c *Clock) Correct(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	mono := c.mono()
	t, _ := c.span.Load().at(mono)
	c.span.Store(&span{base: t.Add(d), monoBase: mono})
	c.corrected += d
}

// noteJump reports the wall clock's difference from the clock when it
// first crosses JumpThreshold, and forgets the report once it is back
// within half of it.
func (c *Clock) noteJump(diff time.Duration) {
	abs := diff
	if abs < 0 {
		abs = -abs
	}
	switch {
	case abs > JumpThreshold && !c.jumped:
		c.jumped = true
		if c.onJump != nil {
			c.onJump(diff)
		}
	case abs < JumpThreshold/2:
		c.jumped = false
	}
}

package clock

import (
	"sync"
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

// Clock keeps a node's time: the wall clock at start, carried forward by
// the monotonic clock and slewed towards the wall clock (doc.go). Its Now
// never goes backwards, but by Correct. It is safe for concurrent use.
type Clock struct {
	wall   func() time.Time     // the wall clock (no monotonic reading)
	mono   func() time.Duration // the monotonic clock, from any origin
	onJump func(wallAhead time.Duration)

	mu       sync.Mutex
	base     time.Time     // the clock's time at monoBase
	monoBase time.Duration // the monotonic reading at base
	last     time.Time     // the last time Now returned
	jumped   bool          // a jump was reported and has not healed
	// corrected is what Correct added: the wall clock plus corrected is
	// the time the clock follows.
	corrected time.Duration
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
	now := wall()
	return &Clock{wall: wall, mono: mono, onJump: onJump, base: now, monoBase: mono(), last: now}
}

// Now returns the node's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Read under the lock, so that callers racing for it never see the
	// monotonic clock go back between their readings.
	wall, mono := c.wall().Add(c.corrected), c.mono()
	elapsed := mono - c.monoBase
	est := c.base.Add(elapsed)
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
	c.base, c.monoBase = est, mono
	c.noteJump(diff)
	if est.Before(c.last) {
		return c.last
	}
	c.last = est
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
	c.base = c.base.Add(d)
	c.corrected += d
	c.last = time.Time{}
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

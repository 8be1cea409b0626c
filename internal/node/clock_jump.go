package node

import "time"

// onClockJump is the node clock's report that the wall clock parted from
// it by more than a second (internal/clock): the node keeps its time by
// the monotonic clock, so stamps and expiries stay right, but the operator
// should know that the machine's clock moved.
func (n *Node) onClockJump(wallAhead time.Duration) {
	n.log.Warn("the wall clock jumped; this node keeps time by its monotonic clock and follows the wall clock by at most 1 ms per second",
		"wall_ahead", wallAhead.Round(time.Millisecond).String())
	n.heal.events.add(EventClockJump, n.cfg.ID, 0, "wall clock "+describeOffset(wallAhead)+" of the node's clock")
}

// describeOffset says how far ahead or behind d is, in words.
func describeOffset(d time.Duration) string {
	if d < 0 {
		return (-d).Round(time.Millisecond).String() + " behind"
	}
	return d.Round(time.Millisecond).String() + " ahead"
}

package node

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/parley-chat/parley/internal/clock"
)

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

// peerClockOffset returns how far a peer's clock, read as answer (Unix ms,
// big-endian; empty from a node that predates it) between sent and got by
// this node's clock, is ahead of this node's.
func peerClockOffset(sent, got time.Time, answer []byte) (time.Duration, bool) {
	if len(answer) != 8 {
		return 0, false
	}
	peer := time.UnixMilli(int64(binary.BigEndian.Uint64(answer)))
	mid := sent.Add(got.Sub(sent) / 2)
	return peer.Sub(mid), true
}

// syncClock sets this node's clock to the cluster's when the median of
// the offsets of the peers that answered its boot and of its own (0) is
// more than clock.JumpThreshold: a node started on a machine whose clock
// is wrong would otherwise stamp wrong times into everything it leads. Its
// own vote keeps one peer with a wrong clock (of two) from moving it.
func (n *Node) syncClock(offsets []time.Duration) {
	if len(offsets) == 0 {
		return
	}
	offsets = append(offsets, 0)
	slices.Sort(offsets)
	median := offsets[len(offsets)/2]
	if median > -clock.JumpThreshold && median < clock.JumpThreshold {
		return
	}
	n.clock.Correct(median)
	n.log.Warn("this machine's wall clock disagrees with the cluster's: the node keeps the cluster's time; set the clock right",
		"cluster_ahead", median.Round(time.Millisecond).String(), "peers", len(offsets))
	n.heal.events.add(EventClockJump, n.cfg.ID, 0, "at start the wall clock was "+describeOffset(-median)+" of the cluster's; the node keeps the cluster's time")
}

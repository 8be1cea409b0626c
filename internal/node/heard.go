package node

import (
	"sync"
	"sync/atomic"
	"time"
)

// heardLog remembers when Raft traffic last came from each node. Every
// live member answers its leaders' heartbeats every tick, and the metadata
// leader heartbeats every member, so on the node that runs the placement
// controller a member silent for a few ticks has most likely died, well
// before gossip suspects it (placement.NodeHealth.Silent).
type heardLog struct {
	nodes sync.Map // node id -> *atomic.Int64 (unix ns)
}

// note records traffic from node now. It is on the Raft receive path: one
// map load and one atomic store.
func (h *heardLog) note(node string, now time.Time) {
	if v, ok := h.nodes.Load(node); ok {
		v.(*atomic.Int64).Store(now.UnixNano())
		return
	}
	v := new(atomic.Int64)
	v.Store(now.UnixNano())
	h.nodes.Store(node, v)
}

// silentFor returns how long node has been silent, and false when nothing
// was ever heard from it.
func (h *heardLog) silentFor(node string, now time.Time) (time.Duration, bool) {
	v, ok := h.nodes.Load(node)
	if !ok {
		return 0, false
	}
	return now.Sub(time.Unix(0, v.(*atomic.Int64).Load())), true
}

// silentAfter is how long a node may go unheard before it gets no
// leadership: five heartbeat ticks, at least 300 ms.
func (n *Node) silentAfter() time.Duration {
	return max(5*n.cfg.TickInterval, 300*time.Millisecond)
}

package node

import (
	"time"

	"github.com/parley-chat/parley/internal/multiraft"
)

// reachWait bounds how long a start waits to hear from the leaders of its
// replicas before the node counts as ready anyway.
const reachWait = time.Minute

// reachPoll is how often watchReached looks at the replicas.
const reachPoll = 250 * time.Millisecond

// watchReached sets n.reached once every replica this node holds has known
// a leader since this start. A leader learns of it only from its own
// messages: its heartbeats, or the votes that made this replica the leader,
// came over the other nodes' connections to this one, so they reach it
// where it is now. Until then the node is not ready (Ready).
//
// A restarted Kubernetes pod needs this: it has a new IP address, and the
// others find it by a name that the cluster's DNS may still resolve to the
// old one for its cache time (30 s with kubeadm's CoreDNS). A rolling
// update that took the next pod down as soon as this one listened left
// partitions without a majority the others could reach, and writes stalled
// for that long (deploy/kubernetes/trial).
//
// After reachWait the node is ready anyway, with a warning naming the
// groups that have no leader: they may have lost their majority, which
// readiness cannot mend.
func (n *Node) watchReached() {
	start := time.Now()
	heard := map[uint64]bool{}
	for {
		if st, err := n.engine.Status(n.ctx); err == nil {
			waiting := leaderless(st, heard)
			if len(waiting) == 0 {
				n.reached.Store(true)
				return
			}
			if time.Since(start) >= reachWait {
				n.log.Warn("ready without having heard from the leader of every replica here; these groups have none", "groups", waiting, "waited", reachWait)
				n.reached.Store(true)
				return
			}
		}
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(reachPoll):
		}
	}
}

// leaderless records in heard the groups of st whose local replica knows a
// leader, and returns, in st's order (Engine.Status gives group order),
// those that have not known one yet.
func leaderless(st []multiraft.GroupStatus, heard map[uint64]bool) []uint64 {
	var out []uint64
	for _, g := range st {
		if g.Leader != 0 {
			heard[g.Group] = true
		}
		if !heard[g.Group] {
			out = append(out, g.Group)
		}
	}
	return out
}

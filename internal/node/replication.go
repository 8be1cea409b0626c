package node

import (
	"context"
	"time"

	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
)

// caughtUpEntries is how far behind its leader's commit a voter may be and
// still count as a full replica.
const caughtUpEntries = 64

// replicaTarget is how many voters a partition of m should have: the
// replication factor, or fewer when the map has fewer nodes that may hold
// replicas (draining nodes may not).
func replicaTarget(m *placement.Map) int {
	holders := 0
	for _, nd := range m.Nodes {
		if nd.State != placement.NodeDraining {
			holders++
		}
	}
	return min(max(1, m.ReplicationFactor), holders)
}

// underReplicated judges a group from its leader's status (st.IsLeader;
// any other status means the caller found no leader, and the group counts
// as under-replicated): it is when a membership change is in flight
// (joint configuration or learners), or fewer than target voters are
// within caughtUpEntries of the leader's commit and alive. Alive is Raft's
// recent activity, or live(replica) for the moments after each quorum
// check when Raft has cleared it until the next heartbeat answer.
func underReplicated(st multiraft.GroupStatus, target int, live func(replica uint64) bool) bool {
	cs := st.ConfState
	if !st.IsLeader || len(cs.VotersOutgoing) > 0 || len(cs.Learners) > 0 {
		return true
	}
	healthy := 0
	for _, id := range cs.Voters {
		pr, ok := st.Progress[id]
		if id == st.Replica || ok && pr.Match+caughtUpEntries >= st.Commit && (pr.Active || live(id)) {
			healthy++
		}
	}
	return healthy < target
}

// localUnderReplicated counts the partitions this node leads that are
// under-replicated: the parley_partitions_under_replicated gauge. Each
// partition is counted by its leader only, so the sum over the nodes is the
// cluster's figure (as Kafka's UnderReplicatedPartitions); a partition
// without a leader is counted by none (parley cluster wait --replicated
// and GET /api/v1/cluster count it).
func (n *Node) localUnderReplicated() int {
	m := n.Map()
	if m == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(n.ctx, time.Second)
	defer cancel()
	sts, err := n.localStatus(ctx)
	if err != nil {
		return 0
	}
	now := time.Now()
	heard := func(replica uint64) bool {
		node, ok := m.ReplicaNode(replica)
		quiet, ever := n.heard.silentFor(node, now)
		return ok && ever && quiet <= n.silentAfter()
	}
	target, count := replicaTarget(m), 0
	for _, st := range sts {
		if st.Group != placement.MetaGroup && st.IsLeader && underReplicated(st, target, heard) {
			count++
		}
	}
	return count
}

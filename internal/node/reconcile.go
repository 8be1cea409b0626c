package node

import (
	"context"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
)

// reconcileInterval is how often the node re-checks placement and membership
// without being woken by a map change.
const reconcileInterval = 250 * time.Millisecond

// reconcileLoop makes the cluster converge on its map: the metadata leader
// decides placement changes; the leader of each group makes that group's
// Raft membership follow the map, one change at a time.
func (n *Node) reconcileLoop() {
	t := time.NewTicker(reconcileInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.reconcile:
		}
		n.reconcileOnce()
	}
}

func (n *Node) reconcileOnce() {
	m := n.Map()
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
	defer cancel()
	if _, local := n.engine.Leader(placement.MetaGroup); local {
		if cmd := placement.NextChange(m); cmd != nil {
			if _, err := n.router.Propose(ctx, placement.MetaGroup, "", cmd.Encode()); err != nil {
				n.log.Debug("placement change failed", "op", cmd.Op, "group", cmd.Group, "err", err)
			} else {
				n.log.Info("placement changed", "op", cmd.Op, "group", cmd.Group, "node", cmd.NodeID, "replica", cmd.Replica)
			}
		}
	}
	sts, err := n.engine.Status(ctx)
	if err != nil {
		return
	}
	for _, st := range sts {
		if !st.IsLeader {
			continue
		}
		g, ok := m.Group(st.Group)
		if !ok {
			continue
		}
		if cc, ok := membershipChange(st, g); ok {
			if err := n.engine.ProposeConfChange(ctx, st.Group, cc); err != nil {
				n.log.Debug("membership change failed", "group", st.Group, "err", err)
			} else {
				n.log.Info("membership changed", "group", st.Group, "change", cc.Changes[0].Type.String(), "replica", cc.Changes[0].NodeID)
			}
			continue
		}
		if to := preferredLeader(st, g); to != 0 && to != st.Replica && caughtUp(st, to) {
			if err := n.engine.TransferLeader(ctx, st.Group, to); err == nil {
				n.log.Debug("leadership handed to preferred replica", "group", st.Group, "to", to)
			}
		}
	}
}

// membershipChange returns the next Raft membership change that makes a
// group follow the map: add missing replicas as learners, promote learners
// the map wants as voters once they have caught up, remove replicas the map
// no longer lists (never the leader itself, which hands leadership over
// first). It is judged against the applied membership.
func membershipChange(st multiraft.GroupStatus, g *placement.Group) (raftpb.ConfChangeV2, bool) {
	cs := st.ConfState
	inMap := map[uint64]placement.Replica{}
	for _, r := range g.Replicas {
		inMap[r.ID] = r
	}
	voter := map[uint64]bool{}
	for _, id := range cs.Voters {
		voter[id] = true
	}
	learner := map[uint64]bool{}
	for _, id := range cs.Learners {
		learner[id] = true
	}
	one := func(t raftpb.ConfChangeType, id uint64) (raftpb.ConfChangeV2, bool) {
		return raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{{Type: t, NodeID: id}}}, true
	}
	if len(cs.VotersOutgoing) > 0 {
		return raftpb.ConfChangeV2{}, false // a joint change is still in progress
	}
	for _, r := range g.Replicas {
		if !voter[r.ID] && !learner[r.ID] {
			return one(raftpb.ConfChangeAddLearnerNode, r.ID)
		}
	}
	for _, r := range g.Replicas {
		if r.Role == placement.RoleVoter && learner[r.ID] && caughtUp(st, r.ID) {
			return one(raftpb.ConfChangeAddNode, r.ID)
		}
	}
	for _, id := range append(append([]uint64(nil), cs.Voters...), cs.Learners...) {
		if _, ok := inMap[id]; !ok && id != st.Replica {
			return one(raftpb.ConfChangeRemoveNode, id)
		}
	}
	return raftpb.ConfChangeV2{}, false
}

// caughtUp reports whether a replica has everything the leader committed.
func caughtUp(st multiraft.GroupStatus, id uint64) bool {
	pr, ok := st.Progress[id]
	return ok && pr.Match >= st.Commit && pr.Active
}

// preferredLeader spreads leadership: group g prefers the (g mod voters)-th
// voter of its map entry, so P groups on N nodes end with about P/N leaders
// each. It returns 0 when the map lists no voter that is a voter in Raft.
func preferredLeader(st multiraft.GroupStatus, g *placement.Group) uint64 {
	voters := map[uint64]bool{}
	for _, id := range st.ConfState.Voters {
		voters[id] = true
	}
	var ids []uint64
	for _, r := range g.Replicas {
		if r.Role == placement.RoleVoter && voters[r.ID] {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return 0
	}
	return ids[int(g.ID)%len(ids)]
}

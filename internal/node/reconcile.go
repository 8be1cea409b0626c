package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
)

// reconcileInterval is how often the node re-checks membership without
// being woken by a map change.
const reconcileInterval = 250 * time.Millisecond

// orphanSweepEvery is how often a node looks for local replicas the map no
// longer lists (removed while the node was away).
const orphanSweepEvery = 2 * time.Second

// reconcileLoop makes the Raft membership of every group this node leads
// follow the cluster map, one change at a time, and deletes local replicas
// that were removed while the node was away. Placement itself is decided by
// the controller (controller.go) on the metadata leader.
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
		} else if to, ok := retiredLeaderHandOff(st, g); ok {
			_ = n.engine.TransferLeader(ctx, st.Group, to)
		}
	}
	if time.Since(n.heal.lastOrphans) >= orphanSweepEvery {
		n.heal.lastOrphans = time.Now()
		n.sweepOrphans(ctx, m, sts)
	}
}

// membershipChange returns the next Raft membership change that makes a
// group follow the map: add missing replicas as learners, promote learners
// the map wants as voters once they have caught up, demote voters the map
// lists as learners, remove replicas the map no longer lists (never the
// leader itself: the controller hands leadership over first). It is judged
// against the applied membership; the library would turn a second pending
// change into a no-op, so nothing is proposed while a joint change is being
// left, and the next round re-reads the applied membership.
func membershipChange(st multiraft.GroupStatus, g *placement.Group) (raftpb.ConfChangeV2, bool) {
	cs := st.ConfState
	one := func(t raftpb.ConfChangeType, id uint64) (raftpb.ConfChangeV2, bool) {
		return raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{{Type: t, NodeID: id}}}, true
	}
	if len(cs.VotersOutgoing) > 0 || len(cs.LearnersNext) > 0 {
		return raftpb.ConfChangeV2{}, false // a joint change is still in progress
	}
	voter := func(id uint64) bool { return slices.Contains(cs.Voters, id) }
	learner := func(id uint64) bool { return slices.Contains(cs.Learners, id) }
	for _, r := range g.Replicas {
		if !voter(r.ID) && !learner(r.ID) {
			return one(raftpb.ConfChangeAddLearnerNode, r.ID)
		}
	}
	for _, r := range g.Replicas {
		if r.Role == placement.RoleVoter && learner(r.ID) && caughtUp(st, r.ID) {
			return one(raftpb.ConfChangeAddNode, r.ID)
		}
	}
	for _, r := range g.Replicas {
		if r.Role == placement.RoleLearner && voter(r.ID) && r.ID != st.Replica {
			return one(raftpb.ConfChangeAddLearnerNode, r.ID) // demote
		}
	}
	for _, id := range slices.Concat(cs.Voters, cs.Learners) {
		if _, ok := replicaNodeOf(g, id); !ok && id != st.Replica {
			return one(raftpb.ConfChangeRemoveNode, id)
		}
	}
	return raftpb.ConfChangeV2{}, false
}

// catchUpSlack is how many entries a replica may trail the leader's commit
// index and still count as caught up: under steady writes a healthy
// follower is always a few entries behind.
const catchUpSlack = 64

// caughtUp reports whether a replica has (nearly) everything the leader
// committed and answers it.
func caughtUp(st multiraft.GroupStatus, id uint64) bool {
	pr, ok := st.Progress[id]
	return ok && pr.Active && pr.Match+catchUpSlack >= st.Commit && pr.Match > 0
}

// sweepOrphans deletes local partition replicas the map no longer assigns
// to this node, once a leader of the group confirms that its applied
// membership no longer holds them: replicas removed while this node was
// down or cut off, which never saw their removal.
func (n *Node) sweepOrphans(ctx context.Context, m *placement.Map, sts []multiraft.GroupStatus) {
	statusOf := map[string][]multiraft.GroupStatus{}
	for _, st := range sts {
		if st.Group == placement.MetaGroup {
			continue
		}
		if r, ok := m.ReplicaOn(st.Group, n.cfg.ID); ok && r.ID == st.Replica {
			continue
		}
		removed, err := n.removedFromGroup(ctx, m, st, statusOf)
		if err != nil || !removed {
			continue
		}
		if err := n.engine.CloseGroup(ctx, st.Group, true); err != nil && !errors.Is(err, context.Canceled) {
			n.log.Warn("cannot delete removed replica", "group", st.Group, "err", err)
			continue
		}
		n.heal.events.add(EventReplicaDeleted, n.cfg.ID, st.Group, fmt.Sprintf("replica %d was removed while the node was away", st.Replica))
		n.log.Info("deleted a replica removed while away", "group", st.Group, "replica", st.Replica)
	}
}

// removedFromGroup asks the nodes the map lists for group st.Group whether
// one of them leads it without st.Replica in its applied membership.
func (n *Node) removedFromGroup(ctx context.Context, m *placement.Map, st multiraft.GroupStatus, cache map[string][]multiraft.GroupStatus) (bool, error) {
	g, ok := m.Group(st.Group)
	if !ok {
		return false, nil
	}
	for _, r := range g.Replicas {
		nd, ok := m.Node(r.Node)
		if !ok || r.Node == n.cfg.ID {
			continue
		}
		sts, seen := cache[r.Node]
		if !seen {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			sts, _ = n.nodeStatus(cctx, *nd)
			cancel()
			cache[r.Node] = sts
		}
		for _, ls := range sts {
			if ls.Group == st.Group && ls.IsLeader {
				cs := ls.ConfState
				return !slices.Contains(cs.Voters, st.Replica) && !slices.Contains(cs.Learners, st.Replica) &&
					!slices.Contains(cs.VotersOutgoing, st.Replica) && !slices.Contains(cs.LearnersNext, st.Replica), nil
			}
		}
	}
	return false, nil
}

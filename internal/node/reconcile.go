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

// reconcileInterval is how often the node re-checks the Raft configuration
// of the groups it leads without being woken by a map change.
const reconcileInterval = 250 * time.Millisecond

// orphanSweepEvery is how often a node looks for local replicas the map no
// longer lists (removed while the node was away).
const orphanSweepEvery = 2 * time.Second

// reconcileLoop makes the Raft configuration of every group this node leads
// follow the cluster map, one change at a time (placement.NextConfChange;
// learners caught up together are promoted in one joint change),
// and deletes local replicas that were removed while the node was away.
// Placement itself is decided by the controller (controller.go) on the
// metadata leader.
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
	held := n.heal.promoteHeld
	n.heal.promoteHeld = map[uint64]time.Time{} // only the groups that wait this pass stay
	for _, st := range sts {
		if !st.IsLeader {
			continue
		}
		g, ok := m.Group(st.Group)
		if !ok {
			continue
		}
		v := groupView(st)
		if cc, ok := placement.NextConfChange(v, g); ok {
			if placement.LonePromotionWaits(v, g, cc) && n.holdPromotion(held, st.Group) {
				continue
			}
			n.startConfChange(st.Group, cc)
		} else if to, ok := placement.LeaderHandOff(v, g); ok {
			_ = n.engine.TransferLeader(ctx, st.Group, to)
		}
	}
	if time.Since(n.heal.lastOrphans) >= orphanSweepEvery {
		n.heal.lastOrphans = time.Now()
		n.sweepOrphans(ctx, m, sts)
	}
}

// confChangeWait bounds how long one membership change may take to apply
// before the group's next pass proposes again.
const confChangeWait = 5 * time.Second

// startConfChange proposes cc to group on a goroutine of its own, unless a
// change of the group is still under way: a change that cannot commit (a
// group whose other voters are away) holds up only its own group, never
// the other groups this node leads. One that applies wakes the reconciler
// for the group's next change.
func (n *Node) startConfChange(group uint64, cc placement.ConfChange) {
	h := &n.heal
	h.confMu.Lock()
	if h.confBusy[group] {
		h.confMu.Unlock()
		return
	}
	if h.confBusy == nil {
		h.confBusy = map[uint64]bool{}
	}
	h.confBusy[group] = true
	h.confMu.Unlock()
	n.goBackground(func() {
		defer func() {
			h.confMu.Lock()
			delete(h.confBusy, group)
			h.confMu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(n.ctx, confChangeWait)
		defer cancel()
		if err := n.engine.ProposeConfChange(ctx, group, raftConfChange(cc)); err != nil {
			n.log.Debug("raft configuration change failed", "group", group, "change", string(cc.Kind), "replica", cc.Replica, "err", err)
			return
		}
		n.log.Info("raft configuration changed", "group", group, "change", string(cc.Kind), "replica", cc.Replica, "also", cc.Also)
		n.kickReconcile()
	})
}

// promoteHold bounds how long a lone promotion waits for a second learner
// to catch up (placement.LonePromotionWaits): on a new cluster both catch
// up within a second; a learner still behind after that (a slow or dead
// node) is not waited for.
const promoteHold = 2 * time.Second

// holdPromotion reports whether group's lone promotion should wait this
// pass: for up to promoteHold since it first waited (held, the previous
// pass's waits). A group that waits is kept in n.heal.promoteHeld for the
// next pass. Reconcile goroutine only.
func (n *Node) holdPromotion(held map[uint64]time.Time, group uint64) bool {
	since, ok := held[group]
	if !ok {
		since = time.Now()
	}
	if time.Since(since) >= promoteHold {
		return false
	}
	n.heal.promoteHeld[group] = since
	return true
}

// groupView is the applied state of a group as its leader reports it, for
// the placement rules.
func groupView(st multiraft.GroupStatus) placement.GroupView {
	cs := st.ConfState
	v := placement.GroupView{
		Voters: cs.Voters, Learners: cs.Learners, Leader: st.Replica,
		Pending: len(cs.VotersOutgoing) > 0 || len(cs.LearnersNext) > 0,
	}
	for id, pr := range st.Progress {
		if id == st.Replica || placement.CaughtUp(placement.Progress{Match: pr.Match, Active: pr.Active}, st.Commit) {
			v.CaughtUp = append(v.CaughtUp, id)
		}
	}
	slices.Sort(v.CaughtUp)
	return v
}

// raftConfChange is the Raft form of a configuration change. A promotion
// of several learners is one ConfChangeV2 of several changes, which Raft
// carries out through a joint configuration it leaves by itself
// (ConfChangeTransitionAuto).
func raftConfChange(c placement.ConfChange) raftpb.ConfChangeV2 {
	t := raftpb.ConfChangeAddLearnerNode // add a learner, or demote a voter
	switch c.Kind {
	case placement.ConfPromote:
		t = raftpb.ConfChangeAddNode
	case placement.ConfRemove:
		t = raftpb.ConfChangeRemoveNode
	}
	cc := raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{{Type: t, NodeID: c.Replica}}}
	for _, id := range c.Also {
		cc.Changes = append(cc.Changes, raftpb.ConfChangeSingle{Type: t, NodeID: id})
	}
	return cc
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
		if err := n.engine.CloseGroup(ctx, st.Group, st.Replica, true); err != nil && !errors.Is(err, context.Canceled) {
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

package multiraft

import (
	"context"
	"sort"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// GroupStatus describes the local replica of one group.
type GroupStatus struct {
	Group    uint64
	Replica  uint64
	Leader   uint64 // replica id of the known leader, 0 if none
	IsLeader bool
	Term     uint64
	Commit   uint64
	Applied  uint64
	// ConfState is the applied membership.
	ConfState raftpb.ConfState
	// Progress of every replica, known only on the leader.
	Progress map[uint64]ReplicaProgress
	// StaleMs is how far behind the leader this replica may be (see StaleMs).
	StaleMs int64
	// LagMs and LagEntries are the latest lag sample (see Config.OnLag):
	// how long ago the leader stamped the last command applied here, and
	// how many entries the replica was then behind the leader's commit.
	LagMs      int64
	LagEntries uint64
	// LagAt is when that sample was taken (unix ms; 0: none yet).
	LagAt int64
}

// ReplicaProgress is the leader's view of one replica.
type ReplicaProgress struct {
	Match   uint64
	Learner bool
	Active  bool
}

// Status returns the status of every local replica, in group order.
func (e *Engine) Status(ctx context.Context) ([]GroupStatus, error) {
	var out []GroupStatus
	err := e.do(ctx, func() {
		for _, g := range e.groups {
			out = append(out, e.groupStatus(g))
		}
	})
	if err != nil {
		return nil, err // the loop may still fill out later: do not touch it
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	for i := range out {
		out[i].StaleMs, _ = e.StaleMs(out[i].Group)
	}
	return out, nil
}

// GroupStatus returns the status of the local replica of one group; ok is
// false when the node holds none.
func (e *Engine) GroupStatus(ctx context.Context, id uint64) (st GroupStatus, ok bool, err error) {
	var found GroupStatus
	var has bool
	if err = e.do(ctx, func() {
		if g := e.groups[id]; g != nil {
			found, has = e.groupStatus(g), true
		}
	}); err != nil {
		return GroupStatus{}, false, err
	}
	st, ok = found, has
	if ok {
		st.StaleMs, _ = e.StaleMs(id)
	}
	return st, ok, err
}

func (e *Engine) groupStatus(g *group) GroupStatus {
	s := g.rn.Status()
	st := GroupStatus{
		Group:      g.id,
		Replica:    g.replica,
		Leader:     s.Lead,
		IsLeader:   s.RaftState == raft.StateLeader,
		Term:       s.Term,
		Commit:     s.Commit,
		Applied:    g.appliedIdx.Load(),
		ConfState:  g.confState,
		LagMs:      g.lagMs.Load(),
		LagEntries: g.lagEntries.Load(),
		LagAt:      g.lagAt.Load(),
	}
	if st.IsLeader {
		st.Progress = make(map[uint64]ReplicaProgress, len(s.Progress))
		for id, pr := range s.Progress {
			st.Progress[id] = ReplicaProgress{Match: pr.Match, Learner: pr.IsLearner, Active: pr.RecentActive}
		}
	}
	return st
}

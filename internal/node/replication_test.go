package node

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
)

func TestUnderReplicated(t *testing.T) {
	leader := func(voters []uint64, progress map[uint64]multiraft.ReplicaProgress) multiraft.GroupStatus {
		return multiraft.GroupStatus{Replica: 1, IsLeader: true, Commit: 1000, ConfState: raftpb.ConfState{Voters: voters}, Progress: progress}
	}
	ok := multiraft.ReplicaProgress{Match: 1000, Active: true}
	for _, tc := range []struct {
		name   string
		st     multiraft.GroupStatus
		target int
		want   bool
		live   bool // what the caller knows of the voters besides Raft
	}{
		{"three caught-up voters", leader([]uint64{1, 2, 3}, map[uint64]multiraft.ReplicaProgress{2: ok, 3: ok}), 3, false, false},
		{"no leader", multiraft.GroupStatus{}, 3, true, false},
		{"a voter inactive (its node is down)", leader([]uint64{1, 2, 3}, map[uint64]multiraft.ReplicaProgress{2: ok, 3: {Match: 1000}}), 3, true, false},
		{"a voter inactive just after a quorum check but heard", leader([]uint64{1, 2, 3}, map[uint64]multiraft.ReplicaProgress{2: ok, 3: {Match: 1000}}), 3, false, true},
		{"a voter heard but far behind", leader([]uint64{1, 2, 3}, map[uint64]multiraft.ReplicaProgress{2: ok, 3: {Match: 10}}), 3, true, true},
		{"a voter far behind", leader([]uint64{1, 2, 3}, map[uint64]multiraft.ReplicaProgress{2: ok, 3: {Match: 900, Active: true}}), 3, true, false},
		{"a voter slightly behind", leader([]uint64{1, 2, 3}, map[uint64]multiraft.ReplicaProgress{2: ok, 3: {Match: 990, Active: true}}), 3, false, false},
		{"two voters of three wanted", leader([]uint64{1, 2}, map[uint64]multiraft.ReplicaProgress{2: ok}), 3, true, false},
		{"one node, target one", leader([]uint64{1}, nil), 1, false, false},
		{"a learner being added", func() multiraft.GroupStatus {
			st := leader([]uint64{1, 2, 3}, map[uint64]multiraft.ReplicaProgress{2: ok, 3: ok, 4: {Learner: true}})
			st.ConfState.Learners = []uint64{4}
			return st
		}(), 3, true, false},
		{"joint configuration", func() multiraft.GroupStatus {
			st := leader([]uint64{1, 2, 3}, map[uint64]multiraft.ReplicaProgress{2: ok, 3: ok})
			st.ConfState.VotersOutgoing = []uint64{1, 2, 4}
			return st
		}(), 3, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := underReplicated(tc.st, tc.target, func(uint64) bool { return tc.live }); got != tc.want {
				t.Errorf("underReplicated = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReplicaTarget(t *testing.T) {
	nodes := func(states ...string) []placement.Node {
		var out []placement.Node
		for _, s := range states {
			out = append(out, placement.Node{State: s})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		m    placement.Map
		want int
	}{
		{"RF 3 on 3 nodes", placement.Map{ReplicationFactor: 3, Nodes: nodes("", "", "")}, 3},
		{"RF 3 on 5 nodes", placement.Map{ReplicationFactor: 3, Nodes: nodes("", "", "", "", "")}, 3},
		{"RF 3 on 1 node", placement.Map{ReplicationFactor: 3, Nodes: nodes("")}, 1},
		{"a draining node holds none", placement.Map{ReplicationFactor: 3, Nodes: nodes("", "", placement.NodeDraining)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := replicaTarget(&tc.m); got != tc.want {
				t.Errorf("replicaTarget = %d, want %d", got, tc.want)
			}
		})
	}
}

package node

import (
	"reflect"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
)

// A leader's status becomes the view the placement rules judge: its own
// replica and the replicas close enough to its commit count as caught up,
// a joint configuration as pending.
func TestGroupView(t *testing.T) {
	st := multiraft.GroupStatus{Group: 1, Replica: 1, IsLeader: true, Commit: 1000,
		ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4, 5}, VotersOutgoing: []uint64{1, 2}},
		Progress: map[uint64]multiraft.ReplicaProgress{
			1: {Match: 0}, 2: {Match: 1000, Active: true}, 3: {Match: 10, Active: true},
			4: {Match: 999, Active: true}, 5: {Match: 1000, Active: false}}}
	want := placement.GroupView{Voters: []uint64{1, 2, 3}, Learners: []uint64{4, 5}, Leader: 1, CaughtUp: []uint64{1, 2, 4}, Pending: true}
	if got := groupView(st); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestRaftConfChange(t *testing.T) {
	for _, tc := range []struct {
		kind placement.ConfChangeKind
		want raftpb.ConfChangeType
	}{
		{placement.ConfAddLearner, raftpb.ConfChangeAddLearnerNode},
		{placement.ConfPromote, raftpb.ConfChangeAddNode},
		{placement.ConfDemote, raftpb.ConfChangeAddLearnerNode},
		{placement.ConfRemove, raftpb.ConfChangeRemoveNode},
	} {
		cc := raftConfChange(placement.ConfChange{Kind: tc.kind, Replica: 7})
		if len(cc.Changes) != 1 || cc.Changes[0].Type != tc.want || cc.Changes[0].NodeID != 7 {
			t.Errorf("%s: %v", tc.kind, cc)
		}
	}
}

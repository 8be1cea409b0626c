package node

import (
	"reflect"
	"testing"
	"time"

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

// A lone promotion waits from the pass it first would have run, for at most
// promoteHold; a group that stops waiting is forgotten.
func TestHoldPromotion(t *testing.T) {
	n := &Node{}
	n.heal.promoteHeld = map[uint64]time.Time{}
	if !n.holdPromotion(nil, 1) {
		t.Fatal("the first pass does not wait")
	}
	first := n.heal.promoteHeld[1]
	held := n.heal.promoteHeld
	n.heal.promoteHeld = map[uint64]time.Time{}
	if !n.holdPromotion(held, 1) || !n.heal.promoteHeld[1].Equal(first) {
		t.Fatalf("the second pass waits since %v, want since %v", n.heal.promoteHeld[1], first)
	}
	n.heal.promoteHeld = map[uint64]time.Time{}
	if n.holdPromotion(map[uint64]time.Time{1: time.Now().Add(-promoteHold)}, 1) {
		t.Fatal("waited past promoteHold")
	}
	if _, ok := n.heal.promoteHeld[1]; ok {
		t.Fatal("a group past its wait is still kept")
	}
}

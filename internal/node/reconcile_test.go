package node

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
)

// status is a leader's view of a group: replica 1 leads; voters and
// learners as given; every replica caught up unless listed in behind.
func status(voters, learners []uint64, behind ...uint64) multiraft.GroupStatus {
	st := multiraft.GroupStatus{Group: 1, Replica: 1, IsLeader: true, Commit: 1000,
		ConfState: raftpb.ConfState{Voters: voters, Learners: learners}, Progress: map[uint64]multiraft.ReplicaProgress{}}
	for _, id := range append(append([]uint64(nil), voters...), learners...) {
		st.Progress[id] = multiraft.ReplicaProgress{Match: 1000, Active: true}
	}
	for _, id := range behind {
		st.Progress[id] = multiraft.ReplicaProgress{Match: 10, Active: true}
	}
	return st
}

func group(rs ...placement.Replica) *placement.Group {
	return &placement.Group{ID: 1, Replicas: rs}
}

func voter(id uint64) placement.Replica {
	return placement.Replica{ID: id, Node: "n", Role: placement.RoleVoter}
}

func learner(id uint64) placement.Replica {
	return placement.Replica{ID: id, Node: "n", Role: placement.RoleLearner}
}

func TestMembershipChange_FollowsTheMapOneStepAtATime(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   multiraft.GroupStatus
		g    *placement.Group
		want raftpb.ConfChangeType
		id   uint64
		none bool
	}{
		{"new replica joins as a learner", status([]uint64{1, 2}, nil), group(voter(1), voter(2), voter(3)),
			raftpb.ConfChangeAddLearnerNode, 3, false},
		{"caught-up learner promoted", status([]uint64{1, 2}, []uint64{3}), group(voter(1), voter(2), voter(3)),
			raftpb.ConfChangeAddNode, 3, false},
		{"learner far behind waits", status([]uint64{1, 2}, []uint64{3}, 3), group(voter(1), voter(2), voter(3)),
			0, 0, true},
		{"voter the map lists as learner demoted", status([]uint64{1, 2, 3}, nil), group(voter(1), voter(2), learner(3)),
			raftpb.ConfChangeAddLearnerNode, 3, false},
		{"the leader is never demoted", status([]uint64{1, 2, 3}, nil), group(learner(1), voter(2), voter(3)),
			0, 0, true},
		{"replica the map dropped removed", status([]uint64{1, 2, 3, 4}, nil), group(voter(1), voter(2), voter(3)),
			raftpb.ConfChangeRemoveNode, 4, false},
		{"the leader never removes itself", status([]uint64{1, 2, 3}, nil), group(voter(2), voter(3)),
			0, 0, true},
		{"nothing during a joint change", func() multiraft.GroupStatus {
			st := status([]uint64{1, 2, 3}, nil)
			st.ConfState.VotersOutgoing = []uint64{1, 2}
			return st
		}(), group(voter(1), voter(2)), 0, 0, true},
		{"in step", status([]uint64{1, 2}, []uint64{3}), group(voter(1), voter(2), learner(3)), 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, ok := membershipChange(tc.st, tc.g)
			if tc.none {
				if ok {
					t.Fatalf("got %v, want no change", cc)
				}
				return
			}
			if !ok || len(cc.Changes) != 1 || cc.Changes[0].Type != tc.want || cc.Changes[0].NodeID != tc.id {
				t.Fatalf("got %v (%v), want %v of %d", cc, ok, tc.want, tc.id)
			}
		})
	}
}

func TestEventLog_KeepsTheNewestInOrder(t *testing.T) {
	l := newEventLog()
	for i := range eventCapacity + 10 {
		l.add(EventReplicaAdded, "n1", uint64(i), "")
	}
	l.add(EventNodeDead, "n2", 0, "")
	evs := l.list()
	if len(evs) != eventCapacity {
		t.Fatalf("%d events kept", len(evs))
	}
	if evs[0].Group != 11 || evs[len(evs)-1].Kind != EventNodeDead {
		t.Fatalf("oldest %+v, newest %+v", evs[0], evs[len(evs)-1])
	}
	if c := l.Counts(); c[EventReplicaAdded] != eventCapacity+10 || c[EventNodeDead] != 1 {
		t.Fatalf("counts %v", c)
	}
}

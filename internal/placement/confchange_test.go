package placement

import (
	"reflect"
	"testing"
)

// leaderView is a leader's view of a group: replica 1 leads; voters and
// learners as given; every replica caught up unless listed in behind.
func leaderView(voters, learners []uint64, behind ...uint64) GroupView {
	v := GroupView{Voters: voters, Learners: learners, Leader: 1}
	for _, id := range append(append([]uint64(nil), voters...), learners...) {
		caught := true
		for _, b := range behind {
			caught = caught && b != id
		}
		if caught {
			v.CaughtUp = append(v.CaughtUp, id)
		}
	}
	return v
}

func testGroup(rs ...Replica) *Group { return &Group{ID: 1, Replicas: rs} }

func voterOn(id uint64) Replica   { return Replica{ID: id, Node: "n", Role: RoleVoter} }
func learnerOn(id uint64) Replica { return Replica{ID: id, Node: "n", Role: RoleLearner} }

func TestNextConfChange_FollowsTheMapOneStepAtATime(t *testing.T) {
	joint := leaderView([]uint64{1, 2, 3}, nil)
	joint.Pending = true
	for _, tc := range []struct {
		name string
		v    GroupView
		g    *Group
		want ConfChange
		none bool
	}{
		{"new replica joins as a learner", leaderView([]uint64{1, 2}, nil), testGroup(voterOn(1), voterOn(2), voterOn(3)),
			ConfChange{ConfAddLearner, 3, nil}, false},
		{"caught-up learner promoted", leaderView([]uint64{1, 2}, []uint64{3}), testGroup(voterOn(1), voterOn(2), voterOn(3)),
			ConfChange{ConfPromote, 3, []uint64{}}, false},
		{"learners caught up together promoted together", leaderView([]uint64{1}, []uint64{2, 3}), testGroup(voterOn(1), voterOn(2), voterOn(3)),
			ConfChange{ConfPromote, 2, []uint64{3}}, false},
		{"a learner behind is not waited for", leaderView([]uint64{1}, []uint64{2, 3}, 2), testGroup(voterOn(1), voterOn(2), voterOn(3)),
			ConfChange{ConfPromote, 3, []uint64{}}, false},
		{"learner far behind waits", leaderView([]uint64{1, 2}, []uint64{3}, 3), testGroup(voterOn(1), voterOn(2), voterOn(3)),
			ConfChange{}, true},
		{"voter the map lists as learner demoted", leaderView([]uint64{1, 2, 3}, nil), testGroup(voterOn(1), voterOn(2), learnerOn(3)),
			ConfChange{ConfDemote, 3, nil}, false},
		{"the leader is never demoted", leaderView([]uint64{1, 2, 3}, nil), testGroup(learnerOn(1), voterOn(2), voterOn(3)),
			ConfChange{}, true},
		{"replica the map dropped removed", leaderView([]uint64{1, 2, 3, 4}, nil), testGroup(voterOn(1), voterOn(2), voterOn(3)),
			ConfChange{ConfRemove, 4, nil}, false},
		{"the leader never removes itself", leaderView([]uint64{1, 2, 3}, nil), testGroup(voterOn(2), voterOn(3)),
			ConfChange{}, true},
		{"nothing during a joint change", joint, testGroup(voterOn(1), voterOn(2)), ConfChange{}, true},
		{"in step", leaderView([]uint64{1, 2}, []uint64{3}), testGroup(voterOn(1), voterOn(2), learnerOn(3)), ConfChange{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := NextConfChange(tc.v, tc.g)
			if ok == tc.none || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v (%v), want %+v (change: %v)", got, ok, tc.want, !tc.none)
			}
		})
	}
}

// A leader the map no longer lists as a voter hands leadership to a
// caught-up voter of the map; a leader the map keeps does not.
func TestLeaderHandOff(t *testing.T) {
	g := &Group{ID: 1, Replicas: []Replica{{ID: 3, Node: "n2", Role: RoleVoter}, {ID: 4, Node: "n3", Role: RoleVoter}}}
	v := GroupView{Voters: []uint64{2, 3, 4}, Leader: 2, CaughtUp: []uint64{2, 4}}
	if to, ok := LeaderHandOff(v, g); !ok || to != 4 {
		t.Fatalf("retired leader hands over to %d, %v; want 4 (3 is behind)", to, ok)
	}
	v.Leader = 4
	if to, ok := LeaderHandOff(v, g); ok {
		t.Fatalf("a leader the map keeps hands over to %d", to)
	}
}

func TestCaughtUp(t *testing.T) {
	for _, tc := range []struct {
		p      Progress
		commit uint64
		want   bool
	}{
		{Progress{Match: 1000, Active: true}, 1000, true},
		{Progress{Match: 1000 - CatchUpSlack, Active: true}, 1000, true},
		{Progress{Match: 999 - CatchUpSlack, Active: true}, 1000, false},
		{Progress{Match: 1000}, 1000, false},          // not answering
		{Progress{Match: 0, Active: true}, 10, false}, // nothing known yet
		{Progress{Match: 12, Active: true}, 10, true}, // ahead of the leader's view
	} {
		if got := CaughtUp(tc.p, tc.commit); got != tc.want {
			t.Errorf("CaughtUp(%+v, %d) = %v, want %v", tc.p, tc.commit, got, tc.want)
		}
	}
}

// A lone promotion from one voter waits for a second learner the map wants
// as a voter while it catches up; with two voters already, with both
// caught up (one joint change), or with no second learner, it does not.
func TestLonePromotionWaits(t *testing.T) {
	three := testGroup(voterOn(1), voterOn(2), voterOn(3))
	for _, tc := range []struct {
		name string
		v    GroupView
		g    *Group
		want bool
	}{
		{"one voter, the other learner behind", leaderView([]uint64{1}, []uint64{2, 3}, 3), three, true},
		{"one voter, both learners caught up", leaderView([]uint64{1}, []uint64{2, 3}), three, false},
		{"two voters already", leaderView([]uint64{1, 2}, []uint64{3}), three, false},
		{"no second learner wanted", leaderView([]uint64{1}, []uint64{2}), testGroup(voterOn(1), voterOn(2)), false},
		{"the second learner not yet promoted in the map", leaderView([]uint64{1}, []uint64{2, 3}), testGroup(voterOn(1), voterOn(2), learnerOn(3)), true},
		{"a metadata learner stays one", leaderView([]uint64{1}, []uint64{2, 3}), &Group{ID: MetaGroup, Replicas: []Replica{voterOn(1), voterOn(2), learnerOn(3)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, ok := NextConfChange(tc.v, tc.g)
			if !ok {
				t.Fatal("no change")
			}
			if got := LonePromotionWaits(tc.v, tc.g, cc); got != tc.want {
				t.Fatalf("change %+v waits %v, want %v", cc, got, tc.want)
			}
		})
	}
}

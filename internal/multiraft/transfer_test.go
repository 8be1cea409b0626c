package multiraft

import (
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// A leader leaving hands each group to one follower, the same one every
// time it asks: the most up to date, the lowest id among equals, never a
// learner. (Picked in map order, two followers as up to date took turns:
// each ask aborted the transfer under way and could start a second
// campaign beside the first.)
func TestTransferTarget_IsOneFollowerEveryTime(t *testing.T) {
	st := raft.Status{}
	st.ID = 1
	st.Progress = map[uint64]tracker.Progress{
		1: {Match: 10},
		2: {Match: 9},
		3: {Match: 9},
		4: {Match: 10, IsLearner: true},
		5: {Match: 8},
	}
	for range 50 {
		if got := transferTarget(st); got != 2 {
			t.Fatalf("target %d, want 2 (match 9 like 3, lower id; 4 is a learner)", got)
		}
	}
	st.Progress = map[uint64]tracker.Progress{1: {Match: 3}, 4: {Match: 3, IsLearner: true}}
	if got := transferTarget(st); got != 0 {
		t.Fatalf("target %d with only a learner beside the leader, want none", got)
	}
}

package node

import (
	"slices"
	"testing"

	"github.com/parley-chat/parley/internal/multiraft"
)

// A group counts as reached once its replica has known a leader, even if
// it has none at the next look (an election after this node's start).
func TestLeaderless(t *testing.T) {
	heard := map[uint64]bool{}
	got := leaderless([]multiraft.GroupStatus{{Group: 1, Leader: 2}, {Group: 2}, {Group: 3}}, heard)
	if !slices.Equal(got, []uint64{2, 3}) {
		t.Fatalf("first look: waiting for %v, want [2 3]", got)
	}
	got = leaderless([]multiraft.GroupStatus{{Group: 1}, {Group: 2, Leader: 1}, {Group: 3}}, heard)
	if !slices.Equal(got, []uint64{3}) {
		t.Fatalf("second look: waiting for %v, want [3]", got)
	}
}

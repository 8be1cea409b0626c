package node

import (
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/multiraft"
)

// The cluster status's lag of a replica: the latest sample while it is
// fresh, the entries and staleness while behind, nothing for the leader,
// and 0 ms for a replica that has everything and sampled long ago (a
// replica that caught up by replaying old commands keeps their lag as its
// latest sample until the next write, which read as seconds of lag on an
// idle, caught-up replica).
func TestReplicaLag(t *testing.T) {
	now := time.Now()
	ago := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	for _, c := range []struct {
		name          string
		st            multiraft.GroupStatus
		leaderApplied uint64
		ms            int64
		entries       uint64
	}{
		{"caught up, fresh sample", multiraft.GroupStatus{Applied: 9, LagMs: 7, LagAt: ago(time.Second)}, 9, 7, 0},
		{"caught up, old sample", multiraft.GroupStatus{Applied: 9, LagMs: 5441, LagAt: ago(time.Minute)}, 9, 0, 0},
		{"behind, old sample", multiraft.GroupStatus{Applied: 7, LagMs: 3, StaleMs: 800, LagAt: ago(time.Minute)}, 9, 800, 2},
		{"behind, larger sample", multiraft.GroupStatus{Applied: 7, LagMs: 900, StaleMs: 20, LagAt: ago(time.Second)}, 9, 900, 2},
		{"leader", multiraft.GroupStatus{IsLeader: true, Applied: 9, LagMs: 40, LagAt: ago(time.Second)}, 9, 0, 0},
		{"negative sample", multiraft.GroupStatus{Applied: 9, LagMs: -3, LagAt: ago(time.Second)}, 9, 0, 0},
	} {
		ms, entries := replicaLag(c.st, c.leaderApplied, now)
		if ms != c.ms || entries != c.entries {
			t.Errorf("%s: lag %d ms, %d entries; want %d ms, %d entries", c.name, ms, entries, c.ms, c.entries)
		}
	}
}

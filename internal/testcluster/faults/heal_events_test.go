package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// The placement decisions a metadata leader recorded stay in
// GET /api/v1/cluster/events after leadership moves to another node, asked
// through a third node, each listed once.
func TestHeal_EventsOfAFormerMetaLeaderKept(t *testing.T) {
	c := newHealCluster(t, 3, 3, 5*time.Second)
	old := c.LeaderOf(placement.MetaGroup)
	token := c.Client(old).Token()
	// Growing to 3 nodes made the first leader add and promote replicas.
	var decided []map[string]any
	for _, e := range clusterEvents(t, c.Node(old).HTTPAddr(), token) {
		if e["kind"] == "replica_added" || e["kind"] == "replica_promoted" {
			decided = append(decided, e)
		}
	}
	if len(decided) == 0 {
		t.Fatal("the metadata leader recorded no decision while the cluster grew")
	}

	next := (old + 1) % 3
	r, ok := anyMap(c).ReplicaOn(placement.MetaGroup, c.Node(next).ID())
	if !ok || r.Role != placement.RoleVoter {
		t.Fatalf("%s is no metadata voter", c.Node(next).ID())
	}
	poll.Until(t, 30*time.Second, "metadata leadership moved", func() error {
		if lead := c.LeaderOf(placement.MetaGroup); lead != old && lead >= 0 {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Node(old).Engine().TransferLeader(ctx, placement.MetaGroup, r.ID)
		return fmt.Errorf("still on %s", c.Node(old).ID())
	})
	third := 3 - old - c.LeaderOf(placement.MetaGroup)
	evs := clusterEvents(t, c.Node(third).HTTPAddr(), token)
	for _, d := range decided {
		n := 0
		for _, e := range evs {
			if fmt.Sprint(e) == fmt.Sprint(d) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the former leader's %v is listed %d times by %s", d, n, c.Node(third).ID())
		}
	}
}

// After a node is killed, the groups it led elect leaders elsewhere; until
// gossip suspects it, it still looks alive, and leader balancing used to hand
// it leaderships back (issue 8, point 13). No leadership may move to it.
func TestHeal_NoLeadershipMovesToAKilledNode(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	// The production tick: Raft notices a dead follower (its progress goes
	// inactive) only after an election timeout, gossip later still.
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 8, NoSync: true, Tick: 100 * time.Millisecond})
	c.WaitLeadersBalanced(60 * time.Second)
	meta := c.LeaderOf(placement.MetaGroup)
	victim := (meta + 1) % 3
	id := c.Node(victim).ID()
	token := c.Client(meta).Token()
	killed := time.Now()
	c.Kill(victim)
	time.Sleep(5 * time.Second) // elections, balancing rounds, and gossip's suspicion
	for _, e := range clusterEvents(t, c.Node(meta).HTTPAddr(), token) {
		ts, _ := e["ts"].(float64)
		if e["kind"] == "leader_moved" && e["node"] == id && int64(ts) >= killed.UnixMilli() {
			t.Errorf("leadership moved to the killed node %d ms after the kill: %v", int64(ts)-killed.UnixMilli(), e)
		}
	}
}

package testcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/poll"
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

package testcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/testcluster"
)

// With more nodes than the metadata group has voters, the others hold it
// as learners for good: the cluster status shows them as learners, not as
// moves that never finish, so "no moves" means a settled cluster.
func TestClusterStatus_MetadataLearnersAreNoMoves(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 4, Partitions: 2, NoSync: true})
	c.WaitConverged(30 * time.Second)
	cl := c.Client(0)
	var last string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cl.Cluster(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		metaLearners := 0
		for _, n := range c.Node(0).Map().Groups {
			if n.ID != placement.MetaGroup {
				continue
			}
			for _, r := range n.Replicas {
				if r.Role == placement.RoleLearner {
					metaLearners++
				}
			}
		}
		if metaLearners == 0 {
			t.Fatal("the metadata group has no learner with 4 nodes: the test shows nothing")
		}
		if len(st.Moves) == 0 {
			return
		}
		last = ""
		for _, m := range st.Moves {
			last += " " + m.Phase
			if m.Partition == placement.MetaGroup && m.Phase == "learner" {
				last += "(metadata)"
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("a converged 4-node cluster lists moves for 20 s:%s", last)
		}
	}
}

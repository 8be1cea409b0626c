package testcluster_test

import (
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// A restarted node is not ready until the leaders of its replicas reach
// it. A restarted Kubernetes pod comes back at a new IP address that the
// others may not resolve its name to for a while (the cluster DNS's
// cache); a rolling update goes on to the next pod once this one is ready,
// so a node that called itself ready then left partitions without a
// reachable majority. Here the others cannot send to the restarted node at
// all: it stays unready, and becomes ready once they can.
func TestCluster_RestartedNodeIsReadyOnlyOnceItsLeadersReachIt(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, NoSync: true})
	c.WaitConverged(30 * time.Second)
	addr := c.Node(2).ClusterAddr()
	c.Kill(2)
	for _, i := range []int{0, 1} {
		c.Node(i).Transport().Faults().Isolate(addr)
	}
	c.Restart(2)
	// Its own map and store are there at once: before this gate it was
	// ready now.
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		if c.Node(2).Ready() {
			t.Fatal("node 2 is ready while no other node can reach it")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, i := range []int{0, 1} {
		c.Node(i).Transport().Faults().Heal(addr)
	}
	poll.Until(t, 30*time.Second, "node 2 ready once the others reach it", c.Node(2).Ready)
	c.WaitConverged(30 * time.Second)
}

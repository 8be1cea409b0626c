package testcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
	"github.com/parley-chat/parley/internal/transport"
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
	c, heal := restartCutOff(t, (*transport.Faults).Isolate)
	// Its own map and store are there at once: before this gate it was
	// ready now.
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		if c.Node(2).Ready() {
			t.Fatal("node 2 is ready while no other node can reach it")
		}
		time.Sleep(20 * time.Millisecond)
	}
	heal()
	poll.Until(t, 30*time.Second, "node 2 ready once the others reach it", c.Node(2).Ready)
	c.WaitConverged(30 * time.Second)
}

// While the others cannot reach a restarted node yet (they cannot dial its
// new address), it can still reach them, so it serves requests sent to its
// own address through them instead of waiting for leaders that cannot
// reach it. Before, every request there first spent the two seconds a
// session check waits for a quorum (account.sessionQuorumBudget), then
// answered 503 for a session its replica did not know: a client sending to
// every node in turn saw a 2 s write per restarted pod for the half minute
// its name pointed elsewhere (deploy/kubernetes/trial).
func TestCluster_UnreachedNodeServesThroughTheOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c, heal := restartCutOff(t, (*transport.Faults).CutDial)
	// A session made now, on a replica node 2's copy has not seen.
	cl := c.Client(2)
	for i := range 5 {
		key := fmt.Sprintf("unreached/%d", i)
		// Under the session check's quorum wait: a request that waits for
		// it fails here.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cl.KVPut(ctx, key, []byte("v"), client.PutOptions{})
		if err == nil {
			_, _, err = cl.KVGet(ctx, key, client.GetOptions{})
		}
		cancel()
		if err != nil {
			t.Fatalf("put and read %s through node 2 while the others cannot reach it: %v", key, err)
		}
		if c.Node(2).Ready() {
			t.Fatal("node 2 is ready while no other node can reach it")
		}
		if _, _, err := c.Client(0).KVGet(context.Background(), key, client.GetOptions{}); err != nil {
			t.Fatalf("read %s at node 0: %v", key, err)
		}
	}
	heal()
	poll.Until(t, 30*time.Second, "node 2 ready once the others reach it", c.Node(2).Ready)
}

// restartCutOff starts a converged 3-node cluster, kills node 2, cuts it
// off from the others with cut (called on their transports with its
// address) and restarts it; heal undoes the cut.
func restartCutOff(t *testing.T, cut func(f *transport.Faults, peer string)) (c *testcluster.Cluster, heal func()) {
	c = testcluster.New(t, testcluster.Options{Nodes: 3, NoSync: true})
	c.WaitConverged(30 * time.Second)
	addr := c.Node(2).ClusterAddr()
	c.Kill(2)
	for _, i := range []int{0, 1} {
		cut(c.Node(i).Transport().Faults(), addr)
	}
	c.Restart(2)
	return c, func() {
		for _, i := range []int{0, 1} {
			c.Node(i).Transport().Faults().Heal(addr)
		}
	}
}

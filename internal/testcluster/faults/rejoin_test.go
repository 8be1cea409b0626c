package faults_test

import (
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/testcluster"
)

// A node killed right after joining, before it received the cluster map
// through its metadata replica, resumes when restarted.
func TestMembership_RestartRightAfterJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Partitions: 4, NoSync: true})
	for i := 0; i < 5; i++ {
		n := c.AddNode()
		c.Kill(n)
		c.Restart(n)
	}
	c.WaitConverged(30 * time.Second)
	c.VerifyReplicas(20 * time.Second)
}

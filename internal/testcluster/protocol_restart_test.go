package testcluster_test

import (
	"testing"

	"github.com/parley-chat/parley/internal/compat"
)

// A node restarted while a peer is down still counts the peer at the
// protocol gossip last reported of it, so that what needs the whole cluster
// at that protocol (here, creating an API token) keeps working through the
// restarted node. Before, gossip on the restarted node never heard of the
// dead peer, counted it as protocol 1, and the node answered 503
// upgrade_in_progress until the peer came back.
func TestProtocol_RestartedNodeRemembersADownPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 3, 3)
	waitProtocol(t, c, compat.Protocol)
	ctx := apiCtx(t)
	alice := signUp(t, c, 0, 1, "alice")
	c.Kill(2)
	c.Kill(1)
	c.Restart(1)
	if p := c.Node(1).ClusterProtocol(); p != compat.Protocol {
		t.Fatalf("n2, restarted while n3 is down, sees the cluster at protocol %d, want %d", p, compat.Protocol)
	}
	if _, err := as(c, 1, alice).CreateAPIToken(ctx, "after-restart", []string{"read"}, 0); err != nil {
		t.Fatalf("create a token via n2, restarted while n3 is down: %v", err)
	}
}

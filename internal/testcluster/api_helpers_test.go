package testcluster_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// apiShapes are the cluster shapes the API tests run on: every node holds
// every partition (3 nodes, RF 3), and some nodes hold none of a given
// partition (4 nodes, RF 3), so every call must work through forwarding.
var apiShapes = []struct {
	name      string
	nodes, rf int
}{
	{"3 nodes RF3", 3, 3},
	{"4 nodes RF3", 4, 3},
}

// The API tests' short names for the user helpers of package testcluster.
var (
	apiCtx   = testcluster.StepContext
	password = testcluster.Password
	anonAt   = testcluster.Anon
	signUp   = testcluster.SignUp
	signIn   = testcluster.SignIn
	fmtSeqs  = testcluster.FormatSeqs
)

// newAPICluster starts a cluster for API tests, with the login rate limit
// raised out of the way.
func newAPICluster(t *testing.T, nodes, rf int) *testcluster.Cluster {
	t.Helper()
	return testcluster.New(t, testcluster.Options{
		Nodes:             nodes,
		ReplicationFactor: rf,
		NoSync:            true,
		Configure: func(_ int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			cfg.LinksAddr = "127.0.0.1:0" // short links alone too: the link tests ask both listeners
		},
	})
}

// forEachShape runs fn on a fresh cluster of every shape.
func forEachShape(t *testing.T, fn func(t *testing.T, c *testcluster.Cluster)) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	for _, s := range apiShapes {
		t.Run(s.name, func(t *testing.T) {
			fn(t, newAPICluster(t, s.nodes, s.rf))
		})
	}
}

// signUpAdmin registers user through node i and returns a client of node i
// signed in as an admin: user when it was the cluster's first user, else
// the cluster's own client (the cluster signs in its first user itself).
func signUpAdmin(t *testing.T, c *testcluster.Cluster, i int, user string) *client.Client {
	t.Helper()
	u, err := anonAt(c, i).Register(apiCtx(t), user, password(user))
	if err != nil {
		t.Fatalf("register %s on n%d: %v", user, i+1, err)
	}
	if u.Admin {
		return signIn(t, c, i, user)
	}
	cl := c.Client(i)
	if cl.Token() == "" {
		t.Fatalf("%s is not admin and the cluster has no signed-in client", user)
	}
	return cl
}

// as returns a client of node i with cl's token.
func as(c *testcluster.Cluster, i int, cl *client.Client) *client.Client {
	return anonAt(c, i, client.WithToken(cl.Token()))
}

// mustStatus checks err is a *client.Error with the given status and code.
func mustStatus(t *testing.T, err error, status int, code string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a %d %s *client.Error", err, err, status, code)
	}
	if e.Status != status || e.Code != code {
		t.Fatalf("error %d %s (%s), want %d %s", e.Status, e.Code, e.Message, status, code)
	}
}

// noReplica returns a node holding no replica of the partition of
// routingKey, or -1 when every node holds one. When the cluster map gives
// the partition fewer replicas than there are nodes, a cluster that has
// just grown may still be moving them (one on every node for a moment), so
// it looks again for a few seconds before answering -1.
func noReplica(c *testcluster.Cluster, routingKey string) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		placed := 0
		for i := 0; i < c.Len(); i++ {
			n := c.Node(i)
			if n == nil {
				continue
			}
			g := n.Router().PartitionOf(routingKey)
			if !n.Engine().HasGroup(g) {
				return i
			}
			if m := n.Map(); m != nil {
				if grp, ok := m.Group(g); ok {
					placed = len(grp.Replicas)
				}
			}
		}
		if placed >= c.Len() || time.Now().After(deadline) {
			return -1
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitProtocol waits until every node of c sees the whole cluster speak
// protocol want (by gossip): commands new at it are refused until then.
func waitProtocol(t *testing.T, c *testcluster.Cluster, want int) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("every node sees the whole cluster at protocol %d", want), func() error {
		for i := 0; i < c.Len(); i++ {
			if p := c.Node(i).ClusterProtocol(); p < want {
				return fmt.Errorf("n%d sees protocol %d", i+1, p)
			}
		}
		return nil
	})
}

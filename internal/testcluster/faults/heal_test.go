package faults_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// newHealCluster starts a cluster whose nodes declare a peer gone after
// deadAfter.
func newHealCluster(t *testing.T, nodes, rf int, deadAfter time.Duration) *testcluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("cluster test")
	}
	return testcluster.New(t, testcluster.Options{
		Nodes: nodes, Partitions: 8, ReplicationFactor: rf, NoSync: true,
		Configure: func(_ int, cfg *config.Config) {
			cfg.DeadAfter = deadAfter
			cfg.RateLimit = 1 << 20
		},
	})
}

// running returns the ids and clients of the nodes that are up.
func running(c *testcluster.Cluster, clients []*client.Client) ([]string, []*client.Client) {
	var ids []string
	var cls []*client.Client
	for i := range c.Len() {
		if n := c.Node(i); n != nil {
			ids = append(ids, n.ID())
			if i < len(clients) {
				cls = append(cls, clients[i])
			}
		}
	}
	return ids, cls
}

func clientsOf(c *testcluster.Cluster) []*client.Client {
	out := make([]*client.Client, c.Len())
	for i := range out {
		out[i] = c.Client(i)
	}
	return out
}

// anyMap returns the cluster map as a running node sees it.
func anyMap(c *testcluster.Cluster) *placement.Map {
	for i := range c.Len() {
		if n := c.Node(i); n != nil {
			return n.Map()
		}
	}
	return nil
}

// waitPlaced waits until the map places every group on the running nodes
// only (placedOn) and Raft membership follows it, and returns how long it
// took.
func waitPlaced(t *testing.T, c *testcluster.Cluster, rf int, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	poll.Until(t, within, "replicas placed on the running nodes", func() error {
		ids, _ := running(c, nil)
		if err := placedOn(anyMap(c), rf, ids); err != nil {
			return err
		}
		return c.Converged()
	})
	return time.Since(start)
}

// 5 nodes, RF 3: the metadata leader is killed for good, then another node.
// Each time every partition and the metadata group are rebuilt to full
// strength on the survivors, while linearizable writes and reads go on and
// nothing acknowledged is lost.
func TestHeal_DeadNodesReplicasRebuilt(t *testing.T) {
	const deadAfter = 2 * time.Second
	c := newHealCluster(t, 5, 3, deadAfter)
	clients := clientsOf(c)
	load := startKVLoad(t, "k", 8, 40, func() []*client.Client { _, cls := running(c, clients); return cls })
	load.waitAcks(200, time.Minute)

	for round := range 2 {
		waitStable(t, c) // the victim holds its fair share when it dies
		victim := c.LeaderOf(placement.MetaGroup)
		if round == 1 {
			victim = c.LeaderOf(1)
		}
		id := c.Node(victim).ID()
		c.Kill(victim)
		took := waitPlaced(t, c, 3, 90*time.Second)
		t.Logf("killed %s: full replication on the survivors %v after the kill (dead-after %v)", id, took, deadAfter)
		load.waitAcks(200, time.Minute)
	}
	_, cls := running(c, clients)
	load.stop(cls[0])
	c.VerifyReplicas(30 * time.Second)

	via := c.LeaderOf(1)
	evs := clusterEvents(t, c.Node(via).HTTPAddr(), clients[via].Token())
	for _, kind := range []string{"node_dead", "replica_added", "replica_promoted", "replica_removed"} {
		if !hasEvent(evs, kind) {
			t.Errorf("no %s event in %v", kind, evs)
		}
	}
	resp, err := http.Get("http://" + c.Node(c.LeaderOf(placement.MetaGroup)).HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), `parley_cluster_events_total{kind="replica_added"}`) {
		t.Error("/metrics of the metadata leader counts no replica_added event")
	}
}

// A node restarted within dead-after keeps its replicas: a restart is not a
// departure.
func TestHeal_RestartIsNotADeparture(t *testing.T) {
	c := newHealCluster(t, 4, 3, 20*time.Second)
	waitStable(t, c)
	before := anyMap(c).Clone()
	c.Kill(3)
	time.Sleep(time.Second)
	c.Restart(3)
	c.WaitConverged(30 * time.Second)
	after := anyMap(c)
	for gi, g := range before.Groups {
		if !slices.Equal(g.Replicas, after.Groups[gi].Replicas) {
			t.Fatalf("group %d: replicas %v before the restart, %v after", g.ID, g.Replicas, after.Groups[gi].Replicas)
		}
	}
}

// waitStable waits until the cluster converged with every partition at full
// strength on the running nodes, no move in flight, and replicas balanced.
func waitStable(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	poll.Until(t, time.Minute, "replicas balanced", func() error {
		ids, _ := running(c, nil)
		m := anyMap(c)
		if m == nil {
			return errors.New("no node running")
		}
		if err := placedOn(m, m.ReplicationFactor, ids); err != nil {
			return err
		}
		if err := replicasBalanced(m, ids); err != nil {
			return err
		}
		return c.Converged()
	})
}

// A node down longer than dead-after loses its replicas to the others; when
// it comes back it deletes the replicas removed while it was away and gets
// a fair share again, with new replica ids.
func TestHeal_ReplicasRemovedWhileAwayAreDeleted(t *testing.T) {
	c := newHealCluster(t, 4, 3, 2*time.Second)
	waitStable(t, c)
	old := map[uint64]uint64{}
	for _, g := range anyMap(c).Groups[1:] {
		if r, ok := anyMap(c).ReplicaOn(g.ID, "n4"); ok {
			old[g.ID] = r.ID
		}
	}
	c.Kill(3)
	waitPlaced(t, c, 3, time.Minute)
	c.Restart(3)
	n4 := c.Node(3)
	poll.Until(t, time.Minute, "n4 holds only replicas the map gives it", func() error {
		m := n4.Map()
		for _, g := range n4.Engine().Groups() {
			st, ok, err := n4.Engine().GroupStatus(context.Background(), g)
			if err != nil || !ok {
				continue
			}
			if r, ok := m.ReplicaOn(g, "n4"); !ok || r.ID != st.Replica {
				return fmt.Errorf("n4 still holds replica %d of group %d", st.Replica, g)
			}
		}
		return nil
	})
	waitStable(t, c)
	for g, id := range old {
		if r, ok := anyMap(c).ReplicaOn(g, "n4"); ok && r.ID == id {
			t.Fatalf("group %d: n4's removed replica %d is back in the map", g, id)
		}
	}
	c.VerifyReplicas(30 * time.Second)
}

// Three nodes grow to six, one at a time, under load: each time replicas
// end within one per node, and finally leaders too.
func TestHeal_GrowThreeToSixBalances(t *testing.T) {
	skipUnlessLong(t)
	c := newHealCluster(t, 3, 3, 5*time.Second)
	clients := clientsOf(c)
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	load := startKVLoad(t, "k", 6, 40, func() []*client.Client {
		<-mu
		defer func() { mu <- struct{}{} }()
		return clients
	})
	for range 3 {
		i := c.AddNode()
		cl := c.Client(i)
		<-mu
		clients = append(slices.Clone(clients), cl)
		mu <- struct{}{}
		waitStable(t, c)
		load.waitAcks(100, time.Minute)
	}
	c.WaitLeadersBalanced(time.Minute)
	load.stop(clients[0])
	c.VerifyReplicas(30 * time.Second)
}

// adminCall sends an admin request with the test user's token (the first
// user registered, so an admin).
func adminCall(t *testing.T, c *testcluster.Cluster, via int, method, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, "http://"+c.Node(via).HTTPAddr()+path, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+c.Client(via).Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// clusterEvents returns GET /api/v1/cluster/events of the server at addr.
func clusterEvents(t *testing.T, addr, token string) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/cluster/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/v1/cluster/events: %d %v", resp.StatusCode, err)
	}
	return body.Events
}

// A node drained under load hands every replica over with no error a
// client could not retry; then it is removed. Draining the last spare is
// refused, and so is removing a node that is neither drained nor dead.
func TestHeal_DrainThenRemoveUnderLoad(t *testing.T) {
	c := newHealCluster(t, 4, 3, 5*time.Second)
	clients := clientsOf(c)
	if code, body := adminCall(t, c, 0, "DELETE", "/api/v1/cluster/nodes/n4"); code != 409 {
		t.Fatalf("removing an active node: %d %s", code, body)
	}
	load := startKVLoad(t, "k", 8, 40, func() []*client.Client { return clients[:3] })
	load.waitAcks(100, time.Minute)
	code, body := adminCall(t, c, 0, "POST", "/api/v1/cluster/nodes/n4/drain")
	if code != 202 || !strings.Contains(body, `"moves"`) {
		t.Fatalf("drain: %d %s", code, body)
	}
	poll.Until(t, time.Minute, "n4 drained", func() error {
		if h := anyMap(c).Holding("n4"); h > 0 {
			return fmt.Errorf("n4 holds %d replicas", h)
		}
		return c.Converged()
	})
	load.waitAcks(100, time.Minute)
	poll.Until(t, 30*time.Second, "the drain_finished event", func() error {
		if !hasEvent(clusterEvents(t, c.Node(1).HTTPAddr(), clients[1].Token()), "drain_finished") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	if code, body := adminCall(t, c, 1, "DELETE", "/api/v1/cluster/nodes/n4"); code != 200 {
		t.Fatalf("remove the drained node: %d %s", code, body)
	}
	poll.Until(t, 30*time.Second, "n4 forgotten", func() error {
		if _, ok := anyMap(c).Node("n4"); ok {
			return fmt.Errorf("n4 still in the map")
		}
		return nil
	})
	c.Kill(3)
	// Three nodes for RF 3: nowhere to drain to.
	code, body = adminCall(t, c, 0, "POST", "/api/v1/cluster/nodes/n3/drain")
	if code != 409 || !strings.Contains(body, "cannot drain node n3") {
		t.Fatalf("impossible drain: %d %s", code, body)
	}
	rep := load.stop(clients[0])
	t.Logf("during the drain: %d ok, %d retryable errors (%.2f%%), p99 %v",
		rep.ok, rep.fails, 100*float64(rep.fails)/float64(max(1, rep.ok+rep.fails)), rep.p99)
	c.VerifyReplicas(30 * time.Second)
	poll.Until(t, 30*time.Second, "the drain_started and node_removed events", func() error {
		evs := clusterEvents(t, c.Node(0).HTTPAddr(), clients[0].Token())
		for _, kind := range []string{"drain_started", "drain_finished", "node_removed"} {
			if !hasEvent(evs, kind) {
				return fmt.Errorf("no %s event in %v", kind, evs)
			}
		}
		return nil
	})
}

func hasEvent(evs []map[string]any, kind string) bool {
	return slices.ContainsFunc(evs, func(e map[string]any) bool { return e["kind"] == kind })
}

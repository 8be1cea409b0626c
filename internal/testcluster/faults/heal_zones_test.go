package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// newZonedCluster starts a healing cluster whose node i is configured by
// setup (zone, standby) before it starts.
func newZonedCluster(t *testing.T, nodes, rf int, deadAfter time.Duration, setup func(i int, cfg *config.Config)) *testcluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("cluster test")
	}
	return testcluster.New(t, testcluster.Options{
		Nodes: nodes, Partitions: 8, ReplicationFactor: rf, NoSync: true,
		Configure: func(i int, cfg *config.Config) {
			cfg.DeadAfter = deadAfter
			cfg.RateLimit = 1 << 20
			setup(i, cfg)
		},
	})
}

// zoneSpread checks that no group keeps two voters in one zone: with at
// least as many zones as voters, one voter per zone.
func zoneSpread(m *placement.Map) error {
	zone := map[string]string{}
	for _, n := range m.Nodes {
		zone[n.ID] = n.Zone
	}
	for _, g := range m.Groups {
		seen := map[string]string{}
		for _, r := range g.Replicas {
			if r.Role != placement.RoleVoter {
				continue
			}
			z := zone[r.Node]
			if other, ok := seen[z]; ok {
				return fmt.Errorf("group %d has voters on %s and %s, both in zone %q", g.ID, other, r.Node, z)
			}
			seen[z] = r.Node
		}
	}
	return nil
}

// 6 nodes in zones a, a, b, b, c, c with RF 3: every group settles on one
// voter per zone. Zone c is then lost for good: the groups are rebuilt to 3
// voters on the 4 survivors in zones a and b, while writes and reads go on.
func TestHeal_ZonesSpreadThenZoneLost(t *testing.T) {
	zones := []string{"a", "a", "b", "b", "c", "c"}
	c := newZonedCluster(t, 6, 3, 2*time.Second, func(i int, cfg *config.Config) { cfg.Zone = zones[i] })
	clients := clientsOf(c)
	load := startKVLoad(t, "z", 6, 40, func() []*client.Client { _, cls := running(c, clients); return cls })
	load.waitAcks(100, time.Minute)

	poll.Until(t, 90*time.Second, "one voter per zone", func() error {
		if err := zoneSpread(anyMap(c)); err != nil {
			return err
		}
		ids, _ := running(c, nil)
		if err := placedOn(anyMap(c), 3, ids); err != nil {
			return err
		}
		return c.Converged()
	})
	load.waitAcks(100, time.Minute)

	// Rebalancing may still be moving a replica (a group of four voters for
	// a moment): zone c dies in the middle of it, which once left groups
	// without a quorum (a retired replica the directory could not reach).
	c.Kill(4)
	c.Kill(5)
	dumpOnFailure(t, c)
	took := waitPlaced(t, c, 3, 2*time.Minute)
	t.Logf("zone c lost: every group back to 3 voters on zones a and b after %v", took)
	load.waitAcks(100, time.Minute)

	_, cls := running(c, clients)
	load.stop(cls[0])
	c.VerifyReplicas(30 * time.Second)
}

// 4 nodes, one of them standby, RF 3: the standby holds no partition
// replica and no metadata voter (only the map's learner) until a regular
// node dies for good; then it takes that node's replicas, and
// GET /api/v1/cluster reports it as standby.
func TestHeal_StandbyTakesOverADeadNode(t *testing.T) {
	const standby = 3
	c := newZonedCluster(t, 4, 3, 2*time.Second, func(i int, cfg *config.Config) { cfg.Standby = i == standby })
	clients := clientsOf(c)
	load := startKVLoad(t, "s", 6, 40, func() []*client.Client { _, cls := running(c, clients); return cls })
	load.waitAcks(100, time.Minute)

	sid := c.Node(standby).ID()
	regular := []string{c.Node(0).ID(), c.Node(1).ID(), c.Node(2).ID()}
	poll.Until(t, time.Minute, "everything placed on the regular nodes", func() error {
		if err := placedOn(anyMap(c), 3, regular); err != nil {
			return err
		}
		return c.Converged()
	})
	if err := standbyHoldsNothing(c.Node(standby).Engine().Groups(), anyMap(c), sid); err != nil {
		t.Fatal(err)
	}
	if st := clusterNode(t, c, 0, sid); !st.Standby || st.Replicas != 0 {
		t.Fatalf("GET /api/v1/cluster reports the standby as %+v", st)
	}

	victim := c.LeaderOf(1)
	if victim == standby {
		t.Fatalf("the standby leads partition 1")
	}
	c.Kill(victim)
	took := waitPlaced(t, c, 3, 2*time.Minute)
	t.Logf("killed %s: the standby %s took over after %v", regular[victim], sid, took)
	if h := partitionsOn(anyMap(c), sid); h != 8 {
		t.Errorf("the standby holds %d partition replicas, want all 8", h)
	}
	via := (victim + 1) % standby
	if st := clusterNode(t, c, via, sid); !st.Standby || st.Replicas != 8 {
		t.Errorf("GET /api/v1/cluster reports the standby as %+v", st)
	}
	load.waitAcks(100, time.Minute)

	_, cls := running(c, clients)
	load.stop(cls[0])
	c.VerifyReplicas(30 * time.Second)
}

// standbyHoldsNothing checks that the standby's engine runs only the
// metadata group and that the map gives it no partition replica and no
// metadata vote.
func standbyHoldsNothing(groups []uint64, m *placement.Map, id string) error {
	for _, g := range groups {
		if g != placement.MetaGroup {
			return fmt.Errorf("the standby runs a replica of partition %d", g)
		}
	}
	if h := partitionsOn(m, id); h != 0 {
		return fmt.Errorf("the map gives the standby %d partition replicas", h)
	}
	if r, ok := m.ReplicaOn(placement.MetaGroup, id); ok && r.Role == placement.RoleVoter {
		return fmt.Errorf("the standby is a metadata voter")
	}
	return nil
}

// clusterNode returns node id as GET /api/v1/cluster on node via reports it.
func clusterNode(t *testing.T, c *testcluster.Cluster, via int, id string) nodeStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Node(via).HTTPAddr()+"/api/v1/cluster", nil)
	req.Header.Set("Authorization", "Bearer "+c.Client(via).Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Nodes []nodeStatus `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/v1/cluster: %d %v", resp.StatusCode, err)
	}
	for _, n := range body.Nodes {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("GET /api/v1/cluster lists no node %s", id)
	return nodeStatus{}
}

// nodeStatus is a node of GET /api/v1/cluster.
type nodeStatus struct {
	ID       string `json:"id"`
	Zone     string `json:"zone"`
	State    string `json:"state"`
	Standby  bool   `json:"standby"`
	Replicas int    `json:"replicas"`
}

// partitionsOn returns how many partition replicas the map gives a node.
func partitionsOn(m *placement.Map, id string) int {
	n := 0
	for _, g := range m.Groups[1:] {
		if _, ok := m.ReplicaOn(g.ID, id); ok {
			n++
		}
	}
	return n
}

// dumpOnFailure logs the map and the events of every running node if the
// test fails.
func dumpOnFailure(t *testing.T, c *testcluster.Cluster) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		m := anyMap(c)
		for _, g := range m.Groups {
			t.Logf("group %d: %+v", g.ID, g.Replicas)
		}
		for i := range c.Len() {
			if n := c.Node(i); n != nil {
				for _, g := range m.Groups {
					st, ok, err := n.Engine().GroupStatus(context.Background(), g.ID)
					if ok && err == nil {
						t.Logf("%s group %d: %+v", n.ID(), g.ID, st)
					}
				}
			}
		}
		for _, e := range clusterEvents(t, c.Node(c.LeaderOf(placement.MetaGroup)).HTTPAddr(), c.Client(0).Token()) {
			t.Logf("event %v", e)
		}
	})
}

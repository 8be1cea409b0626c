package placement

import (
	"testing"

	"github.com/parley-chat/parley/internal/state"
)

func mustApply(t *testing.T, w state.Writer, c *Command) Result {
	t.Helper()
	b, err := StateMachine{}.Apply(w, state.Meta{}, c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeResult(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustMap(t *testing.T, r state.Reader) *Map {
	t.Helper()
	m, ok, err := LoadMap(r)
	if err != nil || !ok {
		t.Fatalf("no map: %v", err)
	}
	return m
}

func newCluster(t *testing.T, partitions, rf int) *state.Mem {
	t.Helper()
	w := state.NewMem()
	r := mustApply(t, w, &Command{Op: OpCreate, ClusterID: "c1", Partitions: partitions, ReplicationFactor: rf, MetaVoters: 3,
		Node: &Node{ID: "n1", Incarnation: "i1", Addr: "a1"}})
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	return w
}

func TestStateMachine_Create(t *testing.T) {
	w := newCluster(t, 4, 3)
	m := mustMap(t, w)
	if m.ClusterID != "c1" || m.Hash != HashFNV1a64 || m.Partitions != 4 || len(m.Groups) != 5 || m.NextReplicaID != 6 {
		t.Fatalf("map %+v", m)
	}
	for i, g := range m.Groups {
		if len(g.Replicas) != 1 || g.Replicas[0].ID != uint64(i+1) || g.Replicas[0].Node != "n1" {
			t.Fatalf("group %d: %+v", i, g)
		}
	}
	if r := mustApply(t, w, &Command{Op: OpCreate, ClusterID: "c2", Partitions: 1, ReplicationFactor: 1, Node: &Node{ID: "x", Addr: "y"}}); r.Error == "" {
		t.Fatal("a second create was accepted")
	}
	if mustMap(t, w).ClusterID != "c1" {
		t.Fatal("refused create changed the map")
	}
}

func TestStateMachine_AddNode(t *testing.T) {
	t.Run("new node gets a fresh metadata replica", func(t *testing.T) {
		w := newCluster(t, 2, 3)
		r := mustApply(t, w, &Command{Op: OpAddNode, Node: &Node{ID: "n2", Incarnation: "i2", Addr: "a2"}})
		if r.Error != "" || r.Replica != 4 || r.Map == nil {
			t.Fatalf("result %+v", r)
		}
		if rep, _ := mustMap(t, w).ReplicaOn(MetaGroup, "n2"); rep.ID != 4 || rep.Role != RoleVoter {
			t.Fatalf("meta replica %+v", rep)
		}
	})
	t.Run("same incarnation again is idempotent", func(t *testing.T) {
		w := newCluster(t, 2, 3)
		a := mustApply(t, w, &Command{Op: OpAddNode, Node: &Node{ID: "n2", Incarnation: "i2", Addr: "a2"}})
		b := mustApply(t, w, &Command{Op: OpAddNode, Node: &Node{ID: "n2", Incarnation: "i2", Addr: "a2"}})
		if a.Replica != b.Replica || mustMap(t, w).NextReplicaID != 5 {
			t.Fatalf("re-adding allocated again: %d then %d", a.Replica, b.Replica)
		}
	})
	t.Run("empty data directory gets new replica ids", func(t *testing.T) {
		w := newCluster(t, 2, 3)
		a := mustApply(t, w, &Command{Op: OpAddNode, Node: &Node{ID: "n2", Incarnation: "i2", Addr: "a2"}})
		mustApply(t, w, &Command{Op: OpAddReplica, Group: 1, NodeID: "n2"})
		b := mustApply(t, w, &Command{Op: OpAddNode, Node: &Node{ID: "n2", Incarnation: "i3", Addr: "a2"}})
		if b.Replica == a.Replica {
			t.Fatal("a node with a new incarnation reused its replica id")
		}
		m := mustMap(t, w)
		if _, ok := m.ReplicaOn(1, "n2"); ok {
			t.Fatal("old partition replica of the previous incarnation kept")
		}
		if len(m.Nodes) != 2 {
			t.Fatalf("nodes %+v", m.Nodes)
		}
	})
	t.Run("fourth node is a metadata learner", func(t *testing.T) {
		w := newCluster(t, 1, 3)
		for _, id := range []string{"n2", "n3", "n4"} {
			mustApply(t, w, &Command{Op: OpAddNode, Node: &Node{ID: id, Incarnation: id, Addr: id}})
		}
		if rep, _ := mustMap(t, w).ReplicaOn(MetaGroup, "n4"); rep.Role != RoleLearner {
			t.Fatalf("n4 meta replica role %q, want learner", rep.Role)
		}
	})
	t.Run("malformed command changes nothing", func(t *testing.T) {
		w := newCluster(t, 1, 1)
		before := mustMap(t, w)
		b, err := StateMachine{}.Apply(w, state.Meta{}, []byte("Mnot json"))
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := DecodeResult(b); r.Error == "" {
			t.Fatal("malformed command accepted")
		}
		if after := mustMap(t, w); after.NextReplicaID != before.NextReplicaID {
			t.Fatal("map changed")
		}
	})
}

func TestNextChange(t *testing.T) {
	grow := func(t *testing.T, nodes, partitions, rf int) *Map {
		w := newCluster(t, partitions, rf)
		for i := 2; i <= nodes; i++ {
			id := string(rune('0' + i))
			mustApply(t, w, &Command{Op: OpAddNode, Node: &Node{ID: "n" + id, Incarnation: id, Addr: id}})
		}
		for steps := 0; ; steps++ {
			c := NextChange(mustMap(t, w))
			if c == nil {
				break
			}
			if steps > 1000 {
				t.Fatal("placement does not converge")
			}
			if r := mustApply(t, w, c); r.Error != "" {
				t.Fatalf("placement proposed a refused change %+v: %s", c, r.Error)
			}
		}
		return mustMap(t, w)
	}
	for _, tc := range []struct{ nodes, partitions, rf int }{
		{1, 4, 3}, {2, 4, 3}, {3, 16, 3}, {4, 16, 3}, {5, 16, 3}, {7, 16, 5}, {3, 8, 1},
	} {
		t.Run("", func(t *testing.T) {
			m := grow(t, tc.nodes, tc.partitions, tc.rf)
			want := min(tc.rf, tc.nodes)
			for _, g := range m.Groups[1:] {
				if len(g.Replicas) != want {
					t.Fatalf("%d nodes RF %d: partition %d has %d replicas", tc.nodes, tc.rf, g.ID, len(g.Replicas))
				}
				seen := map[string]bool{}
				for _, r := range g.Replicas {
					if seen[r.Node] {
						t.Fatalf("partition %d has two replicas on %s", g.ID, r.Node)
					}
					seen[r.Node] = true
				}
			}
			counts := map[string]int{}
			for _, g := range m.Groups[1:] {
				for _, r := range g.Replicas {
					counts[r.Node]++
				}
			}
			lo, hi := 1<<30, 0
			for _, n := range m.Nodes {
				lo, hi = min(lo, counts[n.ID]), max(hi, counts[n.ID])
			}
			// n1 created every partition and placement only adds replicas
			// (moving them is the self-healing rebalancer's job), so balance
			// within one is only expected when every node holds every
			// partition (RF >= nodes).
			if tc.nodes <= tc.rf && hi-lo > 1 {
				t.Fatalf("replicas per node between %d and %d", lo, hi)
			}
			if v := m.voters(MetaGroup); v != min(3, tc.nodes) {
				t.Fatalf("metadata voters %d, want %d", v, min(3, tc.nodes))
			}
		})
	}
}

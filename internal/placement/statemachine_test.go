package placement

import (
	"reflect"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/state"
)

func mustApply(t *testing.T, w state.Writer, c Command) Result {
	t.Helper()
	b, err := StateMachine{}.Apply(w, state.Meta{}, Encode(c))
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
	r := mustApply(t, w, CreateCluster{ClusterID: "c1", Partitions: partitions, ReplicationFactor: rf, MetaVoters: 3,
		Node: Node{ID: "n1", Incarnation: "i1", Addr: "a1"}})
	if r.Code != CodeOK {
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
	if r := mustApply(t, w, CreateCluster{ClusterID: "c2", Partitions: 1, ReplicationFactor: 1, Node: Node{ID: "x", Addr: "y"}}); r.Code == CodeOK {
		t.Fatal("a second create was accepted")
	}
	if mustMap(t, w).ClusterID != "c1" {
		t.Fatal("refused create changed the map")
	}
}

// A create asking for more partitions than a cluster may have is refused
// and allocates nothing; the limit itself is accepted.
func TestStateMachine_CreateRefusesTooManyPartitions(t *testing.T) {
	node := Node{ID: "n1", Addr: "a1"}
	w := state.NewMem()
	for _, p := range []int{MaxPartitions + 1, 1 << 40} {
		r := mustApply(t, w, CreateCluster{ClusterID: "c1", Partitions: p, ReplicationFactor: 3, Node: node})
		if r.Code == CodeOK {
			t.Fatalf("create with %d partitions accepted", p)
		}
		if _, ok, err := LoadMap(w); ok || err != nil {
			t.Fatalf("a refused create left a map (%v)", err)
		}
	}
	r := mustApply(t, w, CreateCluster{ClusterID: "c1", Partitions: MaxPartitions, ReplicationFactor: 3, Node: node})
	if r.Code != CodeOK {
		t.Fatal(r.Error)
	}
	if m := mustMap(t, w); m.Partitions != MaxPartitions || len(m.Groups) != MaxPartitions+1 {
		t.Fatalf("%d partitions, %d groups", m.Partitions, len(m.Groups))
	}
}

func TestStateMachine_AddNode(t *testing.T) {
	t.Run("new node gets a fresh metadata replica", func(t *testing.T) {
		w := newCluster(t, 2, 3)
		r := mustApply(t, w, AddNode{Node: Node{ID: "n2", Incarnation: "i2", Addr: "a2"}})
		if r.Code != CodeOK || r.Replica != 4 || r.Map == nil {
			t.Fatalf("result %+v", r)
		}
		if rep, _ := mustMap(t, w).ReplicaOn(MetaGroup, "n2"); rep.ID != 4 || rep.Role != RoleVoter {
			t.Fatalf("meta replica %+v", rep)
		}
	})
	t.Run("same incarnation again is idempotent", func(t *testing.T) {
		w := newCluster(t, 2, 3)
		a := mustApply(t, w, AddNode{Node: Node{ID: "n2", Incarnation: "i2", Addr: "a2"}})
		b := mustApply(t, w, AddNode{Node: Node{ID: "n2", Incarnation: "i2", Addr: "a2"}})
		if a.Replica != b.Replica || mustMap(t, w).NextReplicaID != 5 {
			t.Fatalf("re-adding allocated again: %d then %d", a.Replica, b.Replica)
		}
	})
	t.Run("an id is bound to its certificate", func(t *testing.T) {
		w := newCluster(t, 2, 3)
		mustApply(t, w, AddNode{Node: Node{ID: "n2", Incarnation: "i2", Addr: "a2", CertFP: "fp2"}})
		before := mustMap(t, w)
		for _, claim := range []Node{
			{ID: "n2", Incarnation: "i3", Addr: "evil", CertFP: "fp-other"}, // another certificate
			{ID: "n2", Incarnation: "i3", Addr: "evil", CertFP: "fp2"},      // the same, new incarnation
		} {
			if r := mustApply(t, w, AddNode{Node: claim}); r.Code != CodeNodeIDTaken {
				t.Fatalf("claim %+v: %q", claim, r.Error)
			}
		}
		if after := mustMap(t, w); !reflect.DeepEqual(before, after) {
			t.Fatalf("a refused claim changed the map:\n%+v\n%+v", before, after)
		}
	})
	t.Run("removal revokes the certificate and frees the id", func(t *testing.T) {
		w := newCluster(t, 2, 3)
		mustApply(t, w, AddNode{Node: Node{ID: "n2", Incarnation: "i2", Addr: "a2", CertFP: "fp2"}})
		if r := mustApply(t, w, RemoveNode{NodeID: "n2", Dead: true}); r.Code != CodeOK {
			t.Fatal(r.Error)
		}
		if m := mustMap(t, w); len(m.Revoked) != 1 || m.Revoked[0] != (Revocation{Node: "n2", Fingerprint: "fp2"}) {
			t.Fatalf("revoked %+v", m.Revoked)
		}
		if r := mustApply(t, w, AddNode{Node: Node{ID: "n2", Incarnation: "i3", Addr: "a2", CertFP: "fp2"}}); r.Code == CodeOK {
			t.Fatal("a revoked certificate joined again")
		}
		if r := mustApply(t, w, AddNode{Node: Node{ID: "n2", Incarnation: "i3", Addr: "a2", CertFP: "fp3"}}); r.Code != CodeOK {
			t.Fatalf("a new certificate could not take the freed id: %s", r.Error)
		}
	})
	t.Run("fourth node is a metadata learner", func(t *testing.T) {
		w := newCluster(t, 1, 3)
		for _, id := range []string{"n2", "n3", "n4"} {
			mustApply(t, w, AddNode{Node: Node{ID: id, Incarnation: id, Addr: id}})
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
		if r, _ := DecodeResult(b); r.Code == CodeOK {
			t.Fatal("malformed command accepted")
		}
		if after := mustMap(t, w); after.NextReplicaID != before.NextReplicaID {
			t.Fatal("map changed")
		}
	})
}

func TestStateMachine_TermFence(t *testing.T) {
	w := newCluster(t, 2, 3)
	mustApply(t, w, AddNode{Node: Node{ID: "n2", Incarnation: "2", Addr: "a2"}})
	if r := mustApply(t, w, Fence{Term: 5}); r.Code != CodeOK {
		t.Fatal(r.Error)
	}
	if got := mustMap(t, w).Term; got != 5 {
		t.Fatalf("map term %d after a fence at 5", got)
	}
	before := mustMap(t, w)
	r := mustApply(t, w, AddReplica{Group: 1, NodeID: "n2", Role: RoleLearner, Term: 4})
	if r.Code != CodeStaleTerm {
		t.Fatalf("command of term 4 after a fence at 5: %+v", r)
	}
	if after := mustMap(t, w); len(after.Groups[1].Replicas) != len(before.Groups[1].Replicas) {
		t.Fatal("a stale command changed the map")
	}
	if r := mustApply(t, w, AddReplica{Group: 1, NodeID: "n2", Role: RoleLearner, Term: 5}); r.Code != CodeOK || r.Replica == 0 {
		t.Fatalf("command of the current term: %+v", r)
	}
	if r := mustApply(t, w, AddNode{Node: Node{ID: "n3", Incarnation: "3", Addr: "a3"}}); r.Code != CodeOK {
		t.Fatalf("an unfenced join was refused: %s", r.Error)
	}
}

func TestStateMachine_UpdateNode(t *testing.T) {
	w := newCluster(t, 1, 1)
	if r := mustApply(t, w, UpdateNode{Node: Node{ID: "n1", Incarnation: "i1", GossipAddr: "g1"}}); r.Code != CodeOK {
		t.Fatal(r.Error)
	}
	if n, _ := mustMap(t, w).Node("n1"); n.GossipAddr != "g1" || n.Addr != "a1" {
		t.Fatalf("n1 after the update: %+v", n)
	}
	for _, n := range []Node{{ID: "n1", Incarnation: "old", GossipAddr: "x"}, {ID: "n9", Incarnation: "i9", GossipAddr: "x"}} {
		if r := mustApply(t, w, UpdateNode{Node: n}); r.Code == CodeOK {
			t.Fatalf("update of %+v accepted", n)
		}
	}
	if len(mustMap(t, w).Nodes) != 1 {
		t.Fatal("an update added a node")
	}
}

func TestStateMachine_DrainAndRemoveNode(t *testing.T) {
	w := newCluster(t, 1, 1)
	mustApply(t, w, AddNode{Node: Node{ID: "n2", Incarnation: "2", Addr: "a2"}})
	mustApply(t, w, AddReplica{Group: 1, NodeID: "n2", Role: RoleVoter})
	if r := mustApply(t, w, RemoveNode{NodeID: "n2"}); r.Code == CodeOK {
		t.Fatal("an active node was removed")
	}
	if r := mustApply(t, w, SetNodeState{NodeID: "n2", State: NodeDraining}); r.Code != CodeOK {
		t.Fatal(r.Error)
	}
	if n, _ := mustMap(t, w).Node("n2"); n.State != NodeDraining {
		t.Fatalf("n2 state %q", n.State)
	}
	if r := mustApply(t, w, RemoveNode{NodeID: "n2"}); r.Code == CodeOK || !strings.Contains(r.Error, "holds 1 partition replica and a metadata voter") {
		t.Fatalf("a node still holding a partition replica: %q, want a refusal naming what it holds", r.Error)
	}
	m := mustMap(t, w)
	rep, _ := m.ReplicaOn(1, "n2")
	mustApply(t, w, RemoveReplica{Group: 1, Replica: rep.ID})
	if held := mustMap(t, w).Holding("n2"); held != 1 { // its metadata voter
		t.Fatalf("n2 holds %d, want its metadata voter", held)
	}
	meta, _ := m.ReplicaOn(MetaGroup, "n2")
	mustApply(t, w, SetRole{Group: MetaGroup, Replica: meta.ID, Role: RoleLearner})
	if r := mustApply(t, w, RemoveNode{NodeID: "n2"}); r.Code != CodeOK {
		t.Fatalf("a drained node was not removed: %s", r.Error)
	}
	m = mustMap(t, w)
	if _, ok := m.Node("n2"); ok {
		t.Fatal("n2 still in the map")
	}
	if _, ok := m.ReplicaOn(MetaGroup, "n2"); ok {
		t.Fatal("n2's metadata learner stayed")
	}
	// A dead node goes with its replicas, drained or not.
	mustApply(t, w, AddNode{Node: Node{ID: "n3", Incarnation: "3", Addr: "a3"}})
	mustApply(t, w, AddReplica{Group: 1, NodeID: "n3", Role: RoleVoter})
	if r := mustApply(t, w, RemoveNode{NodeID: "n3", Dead: true}); r.Code != CodeOK {
		t.Fatal(r.Error)
	}
	if _, ok := mustMap(t, w).ReplicaOn(1, "n3"); ok {
		t.Fatal("the dead node's replica stayed in the map")
	}
}

package placement

import (
	"encoding/json"
	"testing"

	"github.com/parley-chat/parley/internal/state"
)

// createdState returns a metadata state holding a created 4-partition
// cluster with one node.
func createdState(t testing.TB) *state.Mem {
	st := state.NewMem()
	c := CreateCluster{ClusterID: "c1", Partitions: 4, ReplicationFactor: 3, Node: Node{ID: "n1", Addr: "127.0.0.1:7071"}}
	if _, err := (StateMachine{}).Apply(st, state.Meta{Index: 1}, Encode(c)); err != nil {
		t.Fatal(err)
	}
	return st
}

// Any metadata command applies without panicking, on an empty state and on
// a created cluster; its result decodes; a command applied without error
// leaves a map that loads and keeps its shape: P+1 groups indexed by id,
// replica ids unique and below NextReplicaID, at most 4096 partitions (the
// configuration's limit).
func FuzzStateMachine_Apply(f *testing.F) {
	for _, c := range []Command{
		CreateCluster{ClusterID: "c2", Partitions: 8, ReplicationFactor: 3, Node: Node{ID: "n1", Addr: "a:1"}},
		AddNode{Node: Node{ID: "n2", Addr: "127.0.0.1:7081", Incarnation: "i2"}},
		AddReplica{Group: 2, NodeID: "n1", Role: RoleLearner},
		SetRole{Group: 1, Replica: 2, Role: RoleVoter},
		RemoveReplica{Group: 3, Replica: 4},
		AddReplica{Group: 1 << 40, NodeID: "n1"},
	} {
		f.Add(Encode(c))
	}
	f.Add(oracleEncode(&oracleCommand{Op: "add_replica", Group: 2, NodeID: "n1", Role: RoleLearner, Term: 3}))
	f.Add([]byte("M{"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, cmd []byte) {
		for _, st := range []*state.Mem{state.NewMem(), createdState(t)} {
			res, err := (StateMachine{}).Apply(st, state.Meta{Index: 2}, cmd)
			if err != nil {
				t.Fatalf("Apply(%q): %v", cmd, err)
			}
			r, err := DecodeResult(res)
			if err != nil {
				t.Fatalf("result %q: %v", res, err)
			}
			if r.Code != CodeOK {
				continue
			}
			m, ok, err := LoadMap(st)
			if err != nil || !ok {
				t.Fatalf("after %q the map does not load: %v %v", cmd, ok, err)
			}
			checkMapShape(t, m)
		}
	})
}

// checkMapShape fails when m breaks the invariants every map keeps.
func checkMapShape(t *testing.T, m *Map) {
	t.Helper()
	if m.Partitions < 1 || m.Partitions > 4096 || len(m.Groups) != m.Partitions+1 {
		b, _ := json.Marshal(m)
		t.Fatalf("map with %d partitions and %d groups: %.300s", m.Partitions, len(m.Groups), b)
	}
	seen := map[uint64]bool{}
	for i, g := range m.Groups {
		if g.ID != uint64(i) {
			t.Fatalf("group at %d has id %d", i, g.ID)
		}
		for _, r := range g.Replicas {
			if r.ID == 0 || r.ID >= m.NextReplicaID || seen[r.ID] {
				t.Fatalf("group %d: replica id %d (next %d) reused or out of range", g.ID, r.ID, m.NextReplicaID)
			}
			seen[r.ID] = true
		}
	}
}

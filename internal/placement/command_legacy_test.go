package placement

import (
	"bytes"
	"maps"
	"testing"

	"github.com/parley-chat/parley/internal/state"
)

// pairedSteps are commands in both forms, the legacy JSON one as the old
// code made it and the typed one: a cluster's life, refusals included.
func pairedSteps() []struct {
	legacy *oracleCommand
	typed  Command
} {
	n1 := Node{ID: "n1", Incarnation: "i1", Addr: "a1", HTTPAddr: "h1", Zone: "z1", CertFP: "fp1"}
	n2 := Node{ID: "n2", Incarnation: "i2", Addr: "a2", HTTPAddr: "h2", Zone: "z2", CertFP: "fp2"}
	n3 := Node{ID: "n3", Incarnation: "i3", Addr: "a3", Standby: true}
	evil := Node{ID: "n2", Incarnation: "i9", Addr: "evil", CertFP: "fp9"}
	tok := JoinToken{ID: "t1", Hash: "h1", Name: "initial", CreatedMs: 1}
	tok2 := JoinToken{ID: "t2", Hash: "h2", CreatedMs: 2, ExpiresMs: 9}
	ca := CASecret{Cert: []byte("cert"), Key: []byte("key")}
	return []struct {
		legacy *oracleCommand
		typed  Command
	}{
		{&oracleCommand{Op: "create", ClusterID: "c1", Partitions: 3, ReplicationFactor: 3, MetaVoters: 3, Node: &n1, CA: &ca, GossipKey: []byte("k1"), Token: &tok},
			CreateCluster{ClusterID: "c1", Partitions: 3, ReplicationFactor: 3, MetaVoters: 3, Node: n1, CA: &ca, GossipKey: []byte("k1"), Token: &tok}},
		{&oracleCommand{Op: "create", ClusterID: "c2", Partitions: 1, ReplicationFactor: 1, Node: &n2},
			CreateCluster{ClusterID: "c2", Partitions: 1, ReplicationFactor: 1, Node: n2}},
		{&oracleCommand{Op: "add_node", Node: &n2, NodeCert: []byte("der2")}, AddNode{Node: n2, Cert: []byte("der2")}},
		{&oracleCommand{Op: "add_node", Node: &n2, NodeCert: []byte("der2")}, AddNode{Node: n2, Cert: []byte("der2")}},
		{&oracleCommand{Op: "add_node", Node: &evil}, AddNode{Node: evil}},
		{&oracleCommand{Op: "add_node", Node: &n3}, AddNode{Node: n3}},
		{&oracleCommand{Op: "fence", Term: 4}, Fence{Term: 4}},
		{&oracleCommand{Op: "add_replica", Group: 1, NodeID: "n2", Role: RoleLearner, Term: 3},
			AddReplica{Term: 3, Group: 1, NodeID: "n2", Role: RoleLearner}},
		{&oracleCommand{Op: "add_replica", Group: 1, NodeID: "n2", Role: RoleLearner, Term: 4},
			AddReplica{Term: 4, Group: 1, NodeID: "n2", Role: RoleLearner}},
		{&oracleCommand{Op: "add_replica", Group: 2, NodeID: "n3"}, AddReplica{Group: 2, NodeID: "n3"}},
		{&oracleCommand{Op: "add_replica", Group: 9, NodeID: "n3"}, AddReplica{Group: 9, NodeID: "n3"}},
		{&oracleCommand{Op: "set_role", Group: 1, Replica: 7, Role: RoleVoter, Term: 5}, SetRole{Term: 5, Group: 1, Replica: 7, Role: RoleVoter}},
		{&oracleCommand{Op: "set_role", Group: 1, Replica: 99, Role: RoleVoter, Term: 5}, SetRole{Term: 5, Group: 1, Replica: 99, Role: RoleVoter}},
		{&oracleCommand{Op: "remove_replica", Group: 1, Replica: 2, Term: 5}, RemoveReplica{Term: 5, Group: 1, Replica: 2}},
		{&oracleCommand{Op: "set_node_state", NodeID: "n3", State: NodeDraining}, SetNodeState{NodeID: "n3", State: NodeDraining}},
		{&oracleCommand{Op: "set_node_state", NodeID: "n3", State: "gone"}, SetNodeState{NodeID: "n3", State: "gone"}},
		{&oracleCommand{Op: "remove_node", NodeID: "n2"}, RemoveNode{NodeID: "n2"}},
		{&oracleCommand{Op: "remove_node", NodeID: "n3"}, RemoveNode{NodeID: "n3"}},
		{&oracleCommand{Op: "update_node", Node: &Node{ID: "n1", Incarnation: "i1", GossipAddr: "g1"}},
			UpdateNode{Node: Node{ID: "n1", Incarnation: "i1", GossipAddr: "g1"}}},
		{&oracleCommand{Op: "update_node", Node: &Node{ID: "n1", Incarnation: "old", Addr: "x"}},
			UpdateNode{Node: Node{ID: "n1", Incarnation: "old", Addr: "x"}}},
		{&oracleCommand{Op: "add_token", Token: &tok2}, AddToken{Token: tok2}},
		{&oracleCommand{Op: "add_token", Token: &tok2}, AddToken{Token: tok2}},
		{&oracleCommand{Op: "revoke_token", TokenID: "t1"}, RevokeToken{ID: "t1"}},
		{&oracleCommand{Op: "revoke_token", TokenID: "t1"}, RevokeToken{ID: "t1"}},
		{&oracleCommand{Op: "rotate_gossip_key", GossipKey: []byte("k2")}, RotateGossipKey{Key: []byte("k2")}},
		{&oracleCommand{Op: "rotate_gossip_key"}, RotateGossipKey{}},
		{&oracleCommand{Op: "remove_node", NodeID: "n2", Dead: true}, RemoveNode{NodeID: "n2", Dead: true}},
		{&oracleCommand{Op: "add_node", Node: &n2}, AddNode{Node: n2}},
	}
}

func dump(t testing.TB, r state.Reader) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := r.Scan(nil, nil, func(k, v []byte) bool {
		out[string(k)] = string(v)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func memOf(kv map[string]string) *state.Mem {
	m := state.NewMem()
	for k, v := range kv {
		_ = m.Set([]byte(k), []byte(v))
	}
	return m
}

func applyRaw(t testing.TB, w state.Writer, cmd []byte) []byte {
	t.Helper()
	b, err := StateMachine{}.Apply(w, state.Meta{}, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The legacy and the binary form of each command change the state alike,
// and alike to the code before the codec (the oracle), step after step; a
// legacy command's result is the very bytes the old code returned, a typed
// one's refuses (or not) alike with a code.
func TestStateMachine_LegacyAndBinaryApplyAlike(t *testing.T) {
	legacy, typed, old := state.NewMem(), state.NewMem(), state.NewMem()
	refusals := 0
	for i, s := range pairedSteps() {
		lres := applyRaw(t, legacy, oracleEncode(s.legacy))
		tres := applyRaw(t, typed, Encode(s.typed))
		ores, err := oracleApply(old, oracleEncode(s.legacy))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(lres, ores) {
			t.Fatalf("step %d (%s): legacy result %s, the old code's %s", i, s.legacy.Op, lres, ores)
		}
		lr, _ := DecodeResult(lres)
		tr, err := DecodeResult(tres)
		if err != nil {
			t.Fatal(err)
		}
		if (lr.Err() == nil) != (tr.Err() == nil) || lr.Replica != tr.Replica || lr.Error != tr.Error {
			t.Fatalf("step %d (%s): legacy %+v, typed %+v", i, s.legacy.Op, lr, tr)
		}
		if tr.Err() != nil {
			refusals++
			if tr.Code == CodeOK || tr.Code == CodeUnspecified {
				t.Fatalf("step %d (%s): refusal without its code: %+v", i, s.legacy.Op, tr)
			}
		}
		if want := dump(t, old); !maps.Equal(dump(t, legacy), want) || !maps.Equal(dump(t, typed), want) {
			t.Fatalf("step %d (%s): states differ:\nold    %v\nlegacy %v\ntyped  %v", i, s.legacy.Op, want, dump(t, legacy), dump(t, typed))
		}
	}
	if refusals < 10 {
		t.Fatalf("only %d refusals: the steps no longer test them", refusals)
	}
}

// legacyBase returns the states a fuzzed legacy command is applied to, built
// by the old code: none, and a cluster with secrets, three nodes (one
// draining), a fenced term and a token more.
func legacyBase(t testing.TB) []*state.Mem {
	rich := state.NewMem()
	for _, s := range pairedSteps()[:8] {
		if _, err := oracleApply(rich, oracleEncode(s.legacy)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*oracleCommand{
		{Op: "set_node_state", NodeID: "n3", State: NodeDraining},
		{Op: "add_token", Token: &JoinToken{ID: "t2", Hash: "h2"}},
	} {
		if _, err := oracleApply(rich, oracleEncode(c)); err != nil {
			t.Fatal(err)
		}
	}
	return []*state.Mem{state.NewMem(), rich}
}

// Any legacy JSON command changes the state exactly as the code before the
// codec did, is refused exactly when that code refused it, and, applied,
// returns the same result bytes.
func FuzzStateMachine_LegacyMatchesOldCode(f *testing.F) {
	for _, s := range pairedSteps() {
		f.Add(oracleEncode(s.legacy)[1:])
	}
	f.Add([]byte(`{"op":"create","partitions":2,"replication_factor":1,"cluster_id":"x"}`))
	f.Add([]byte(`{"op":"update_node","term":99}`))
	f.Add([]byte(` {"OP":"fence","Term":2,"term":7}`))
	f.Add([]byte(`null`))
	var bases []map[string]string
	for _, st := range legacyBase(f) {
		bases = append(bases, dump(f, st))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 0 && body[0] == codecVersion {
			return // the binary form: the old code refused it (DESIGN.md)
		}
		cmd := append([]byte{Tag}, body...)
		for i, base := range bases {
			olds, news := memOf(base), memOf(base)
			ores, err := oracleApply(olds, cmd)
			if err != nil {
				t.Fatal(err)
			}
			nres := applyRaw(t, news, cmd)
			if !maps.Equal(dump(t, olds), dump(t, news)) {
				t.Fatalf("base %d, %s: states differ", i, cmd)
			}
			or, _ := DecodeResult(ores)
			nr, err := DecodeResult(nres)
			if err != nil {
				t.Fatal(err)
			}
			if (or.Err() == nil) != (nr.Err() == nil) {
				t.Fatalf("base %d, %s: old %s, new %s", i, cmd, ores, nres)
			}
			if or.Err() == nil && !bytes.Equal(ores, nres) {
				t.Fatalf("base %d, %s: old result %s, new %s", i, cmd, ores, nres)
			}
		}
	})
}

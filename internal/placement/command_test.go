package placement

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// allCommands holds one command of every kind with every field set.
func allCommands() []Command {
	n := Node{ID: "n1", Incarnation: "i1", Addr: "a:1", HTTPAddr: "h:1", GossipAddr: "g:1", Zone: "z", Standby: true, State: NodeActive, CertFP: "fp"}
	tok := JoinToken{ID: "t1", Hash: "h", Name: "initial", CreatedMs: 1700000000000, ExpiresMs: -1}
	return []Command{
		CreateCluster{ClusterID: "c1", Partitions: 8, ReplicationFactor: 3, MetaVoters: 3, Node: n,
			CA: &CASecret{Cert: []byte("cert"), Key: []byte("key")}, GossipKey: []byte("k1"), Token: &tok},
		CreateCluster{ClusterID: "c1", Partitions: -1, ReplicationFactor: 1 << 40, Node: Node{ID: "n1"}},
		AddNode{Node: n, Cert: []byte("der")},
		AddReplica{Term: 7, Group: 3, NodeID: "n2", Role: RoleLearner},
		SetRole{Term: 7, Group: 3, Replica: 12, Role: RoleVoter},
		RemoveReplica{Term: 1 << 63, Group: 3, Replica: 12},
		Fence{Term: 9},
		SetNodeState{NodeID: "n2", State: NodeDraining},
		RemoveNode{NodeID: "n2", Dead: true},
		UpdateNode{Node: Node{ID: "n1", Incarnation: "i1", GossipAddr: "g:2"}},
		AddToken{Token: tok},
		RevokeToken{ID: "t1"},
		RotateGossipKey{Key: []byte("k2")},
	}
}

func TestEncode_RoundTrips(t *testing.T) {
	for _, c := range allCommands() {
		t.Run(c.Op(), func(t *testing.T) {
			b := Encode(c)
			if b[0] != Tag || b[1] != codecVersion || b[2] != c.kind() {
				t.Fatalf("header %x", b[:3])
			}
			got, err := DecodeCommand(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c) {
				t.Fatalf("decoded %+v, want %+v", got, c)
			}
		})
	}
}

func TestDecodeCommand_RefusesNonCanonical(t *testing.T) {
	fence := Encode(Fence{Term: 5})
	remove := Encode(RemoveNode{NodeID: "n2", Dead: true})
	create := Encode(CreateCluster{ClusterID: "c", Partitions: 1, ReplicationFactor: 1})
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"tag only", []byte{Tag}},
		{"other tag", []byte{'K', codecVersion, kindFence, 5}},
		{"no kind", []byte{Tag, codecVersion}},
		{"unknown kind", []byte{Tag, codecVersion, 99, 5}},
		{"kind zero", []byte{Tag, codecVersion, 0}},
		{"trailing byte", append(fence, 0)},
		{"truncated", fence[:3]},
		{"non-minimal varint", []byte{Tag, codecVersion, kindFence, 0x85, 0x00}},
		{"bool of 2", append(remove[:len(remove)-1:len(remove)-1], 2)},
		{"unknown create flag", append([]byte{Tag, codecVersion, kindCreateCluster, 4}, create[4:]...)},
		{"unknown version", append([]byte{Tag, 2}, fence[2:]...)},
		{"string past the end", []byte{Tag, codecVersion, kindRevokeToken, 9, 'a'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := DecodeCommand(tc.b); !errors.Is(err, errMalformed) {
				t.Fatalf("DecodeCommand(%x) = %+v, %v; want a malformed error", tc.b, c, err)
			}
		})
	}
}

// Whatever DecodeCommand accepts in the binary form re-encodes to the same
// bytes, and decodes to what it re-encodes; it never panics, on legacy JSON
// either.
func FuzzDecodeCommand(f *testing.F) {
	for _, c := range allCommands() {
		f.Add(Encode(c))
	}
	f.Add(oracleEncode(&oracleCommand{Op: "add_node", Node: &Node{ID: "n2", Addr: "a"}}))
	f.Add([]byte{Tag, codecVersion, kindCreateCluster, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil || b[1] != codecVersion {
			return
		}
		again := Encode(c)
		if !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, c, again)
		}
		if c2, err := DecodeCommand(again); err != nil || !reflect.DeepEqual(c2, c) {
			t.Fatalf("%+v decodes back to %+v, %v", c, c2, err)
		}
	})
}

func TestResult_Err(t *testing.T) {
	if err := (Result{Replica: 3}).Err(); err != nil {
		t.Fatalf("an applied command: %v", err)
	}
	err := refused(CodeNoSuchToken, "no such join token").Err()
	if !errors.Is(err, CodeNoSuchToken) || errors.Is(err, CodeStaleTerm) || err.Error() != "no such join token" {
		t.Fatalf("refusal %v", err)
	}
	var rf *Refusal
	if !errors.As(err, &rf) || rf.Code != CodeNoSuchToken {
		t.Fatalf("refusal %#v", err)
	}
	// A refusal an older version recorded has no code.
	r, err := DecodeResult([]byte(`{"error":"stale term: decided by a deposed metadata leader"}`))
	if err != nil || r.Code != CodeUnspecified || !errors.Is(r.Err(), CodeUnspecified) {
		t.Fatalf("codeless refusal: %+v %v", r, err)
	}
	if CodeStaleTerm.String() != "stale_term" || Code(200).String() != "code_200" {
		t.Fatalf("names %q %q", CodeStaleTerm, Code(200))
	}
}

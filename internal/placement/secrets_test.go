package placement

import (
	"bytes"
	"testing"

	"github.com/parley-chat/parley/internal/state"
)

func TestStateMachine_Secrets(t *testing.T) {
	w := state.NewMem()
	if r := mustApply(t, w, CreateCluster{ClusterID: "c1", Partitions: 1, ReplicationFactor: 1,
		Node: Node{ID: "n1", Incarnation: "i1", Addr: "a1", CertFP: "fp1"},
		CA:   &CASecret{Cert: []byte("cert"), Key: []byte("key")}, GossipKey: []byte("k1"),
		Token: &JoinToken{ID: "t1", Hash: "h1", CreatedMs: 1}}); r.Code != CodeOK {
		t.Fatal(r.Error)
	}
	if ca, ok, err := LoadCA(w); err != nil || !ok || string(ca.Key) != "key" {
		t.Fatalf("CA %+v %v %v", ca, ok, err)
	}
	m := mustMap(t, w)
	if m.Nodes[0].CertFP != "fp1" {
		t.Fatalf("node %+v", m.Nodes[0])
	}
	t.Run("tokens", func(t *testing.T) {
		if r := mustApply(t, w, AddToken{Token: JoinToken{ID: "t1", Hash: "other"}}); r.Code == CodeOK {
			t.Fatal("a second token with the same id replaced the first")
		}
		mustApply(t, w, AddToken{Token: JoinToken{ID: "t2", Hash: "h2", ExpiresMs: 9}})
		if toks, err := LoadTokens(w); err != nil || len(toks) != 2 {
			t.Fatalf("tokens %+v %v", toks, err)
		}
		if r := mustApply(t, w, RevokeToken{ID: "t1"}); r.Code != CodeOK {
			t.Fatal(r.Error)
		}
		if r := mustApply(t, w, RevokeToken{ID: "t1"}); r.Code != CodeNoSuchToken {
			t.Fatalf("revoking twice: %q", r.Error)
		}
		if _, ok, _ := LoadToken(w, "t1"); ok {
			t.Fatal("a revoked token is still there")
		}
	})
	t.Run("gossip keys keep the one in use and the one before", func(t *testing.T) {
		for _, k := range []string{"k2", "k3"} {
			if r := mustApply(t, w, RotateGossipKey{Key: []byte(k)}); r.Code != CodeOK {
				t.Fatal(r.Error)
			}
		}
		keys, err := LoadGossipKeys(w)
		if err != nil || len(keys) != 2 || !bytes.Equal(keys[0], []byte("k3")) || !bytes.Equal(keys[1], []byte("k2")) {
			t.Fatalf("keys %q %v", keys, err)
		}
	})
	t.Run("the map carries no secret", func(t *testing.T) {
		b, _, _ := w.Get(keyMap)
		for _, s := range []string{"key", "h2", "k3"} {
			if bytes.Contains(b, []byte(`"`+s+`"`)) {
				t.Fatalf("the map holds %q: %s", s, b)
			}
		}
	})
}

func TestTouchesSecrets(t *testing.T) {
	for _, c := range []struct {
		lo, hi string
		nilHi  bool
		want   bool
	}{
		{"", "", true, true},         // everything
		{"map", "mao", false, false}, // before
		{"map", "secret/", false, false},
		{"map", "secret/a", false, true},
		{"secret/ca", "", true, true},
		{"secret0", "", true, false}, // after
		{"s", "t", false, true},
	} {
		var hi []byte
		if !c.nilHi {
			hi = []byte(c.hi)
		}
		if got := TouchesSecrets([]byte(c.lo), hi); got != c.want {
			t.Errorf("[%q, %q): %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
	if !IsSecretKey([]byte("secret/token/x")) || IsSecretKey([]byte("map")) {
		t.Fatal("IsSecretKey")
	}
}

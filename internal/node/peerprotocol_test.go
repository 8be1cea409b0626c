package node

import (
	"testing"

	"github.com/parley-chat/parley/internal/membership"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/storage"
)

// What gossip reported of each peer survives this node's restart, for that
// incarnation of the peer only; a peer the map dropped, or one that gossips
// no protocol (an older build), is forgotten.
func TestPeerProtocols_RememberWhatGossipReported(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := &placement.Map{Nodes: []placement.Node{
		{ID: "n1", Incarnation: "a"}, {ID: "n2", Incarnation: "b"}, {ID: "n3", Incarnation: "c"},
	}}
	gossip := map[string]membership.Member{
		"n1": {ID: "n1", Meta: membership.Meta{Protocol: 9}}, // this node: not remembered
		"n2": {ID: "n2", Meta: membership.Meta{Protocol: 2}},
		"n3": {ID: "n3"}, // a build that does not say
	}
	member := func(id string) (membership.Member, bool) { mb, ok := gossip[id]; return mb, ok }
	p := &peerProtocols{db: db}
	p.observe(m, member, "n1")
	for id, want := range map[string]int{"n1": 0, "n2": 2, "n3": 0} {
		nd, _ := m.Node(id)
		if got := p.recall(*nd); got != want {
			t.Errorf("recall(%s) = %d, want %d", id, got, want)
		}
	}

	// A restart: a new peerProtocols on the same store, gossip silent.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = storage.Open(dir, storage.Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p = &peerProtocols{db: db}
	if got := p.recall(placement.Node{ID: "n2", Incarnation: "b"}); got != 2 {
		t.Fatalf("after a restart, recall(n2) = %d, want 2", got)
	}
	if got := p.recall(placement.Node{ID: "n2", Incarnation: "rebuilt"}); got != 0 {
		t.Fatalf("recall of another incarnation of n2 = %d, want 0", got)
	}

	// n2 comes back on a build that does not say its protocol (an older
	// release): what it spoke before is forgotten, durably.
	gossip["n2"] = membership.Member{ID: "n2"}
	p.observe(m, member, "n1")
	if got := (&peerProtocols{db: db}).recall(placement.Node{ID: "n2", Incarnation: "b"}); got != 0 {
		t.Fatalf("recall(n2) after it gossiped no protocol = %d, want 0", got)
	}
	gossip["n2"] = membership.Member{ID: "n2", Meta: membership.Meta{Protocol: 2}}
	p.observe(m, member, "n1")

	// The map drops n2: it is forgotten, durably.
	p.observe(&placement.Map{Nodes: m.Nodes[:1]}, member, "n1")
	if got := (&peerProtocols{db: db}).recall(placement.Node{ID: "n2", Incarnation: "b"}); got != 0 {
		t.Fatalf("recall(n2) after the map dropped it = %d, want 0", got)
	}
}

package node

import (
	"testing"

	"github.com/parley-chat/parley/internal/placement"
)

// A replica the controller dropped from the map stays reachable while its
// node is in the map (Raft may still count it as a voter), across later map
// versions; once its node leaves the map it no longer resolves.
func TestDirectory_ResolvesRetiredReplicas(t *testing.T) {
	m1 := &placement.Map{
		Nodes: []placement.Node{{ID: "n1", Addr: "a1"}, {ID: "n2", Addr: "a2"}},
		Groups: []placement.Group{
			{ID: 0, Replicas: []placement.Replica{{ID: 1, Node: "n1"}}},
			{ID: 1, Replicas: []placement.Replica{{ID: 2, Node: "n1"}, {ID: 3, Node: "n2"}}},
		},
	}
	m2 := m1.Clone()
	m2.Groups[1].Replicas = m2.Groups[1].Replicas[1:] // replica 2 removed
	m3 := m2.Clone()
	m3.Groups[0].Replicas = append(m3.Groups[0].Replicas, placement.Replica{ID: 4, Node: "n2"})
	m4 := m3.Clone()
	m4.Nodes = m4.Nodes[1:] // n1 removed
	m4.Groups[0].Replicas = m4.Groups[0].Replicas[1:]

	v := newMapView(m1).keepRetired(nil)
	for i, want := range []struct {
		m    *placement.Map
		addr string
	}{{m2, "a1"}, {m3, "a1"}, {m4, ""}} {
		v = newMapView(want.m).keepRetired(v)
		if got := v.addrOf[2]; got != want.addr {
			t.Fatalf("map %d: retired replica 2 resolves to %q, want %q", i+2, got, want.addr)
		}
		if v.addrOf[3] != "a2" {
			t.Fatalf("map %d: replica 3 resolves to %q", i+2, v.addrOf[3])
		}
	}
	if _, ok := v.addrOf[1]; ok {
		t.Fatal("a replica of a removed node still resolves")
	}
}

package node

import (
	"testing"

	"github.com/parley-chat/parley/internal/api"
)

// Rings of several nodes merge oldest first, an event two nodes both
// returned is listed once, events that only share a time are all kept, and
// only the newest eventCapacity remain.
func TestMergeEvents(t *testing.T) {
	a := api.ClusterEvent{Ts: 5, Kind: EventReplicaAdded, Node: "n2", Group: 1}
	b := api.ClusterEvent{Ts: 5, Kind: EventNodeDead, Node: "n3", Detail: "seen by n1"}
	c := api.ClusterEvent{Ts: 3, Kind: EventNodeDead, Node: "n3", Detail: "seen by n2"}
	got := mergeEvents([]api.ClusterEvent{a, b, c, a, b})
	if len(got) != 3 || got[0] != c {
		t.Fatalf("merged %+v", got)
	}
	var many []api.ClusterEvent
	for i := range 2 * eventCapacity {
		many = append(many, api.ClusterEvent{Ts: int64(2*eventCapacity - i), Kind: EventLeaderMoved})
	}
	got = mergeEvents(many)
	if len(got) != eventCapacity || got[0].Ts != eventCapacity+1 || got[len(got)-1].Ts != 2*eventCapacity {
		t.Fatalf("%d events, from %d to %d", len(got), got[0].Ts, got[len(got)-1].Ts)
	}
}

func TestEventLog_KeepsTheNewestInOrder(t *testing.T) {
	l := newEventLog()
	for i := range eventCapacity + 10 {
		l.add(EventReplicaAdded, "n1", uint64(i), "")
	}
	l.add(EventNodeDead, "n2", 0, "")
	evs := l.list()
	if len(evs) != eventCapacity {
		t.Fatalf("%d events kept", len(evs))
	}
	if evs[0].Group != 11 || evs[len(evs)-1].Kind != EventNodeDead {
		t.Fatalf("oldest %+v, newest %+v", evs[0], evs[len(evs)-1])
	}
	if c := l.Counts(); c[EventReplicaAdded] != eventCapacity+10 || c[EventNodeDead] != 1 {
		t.Fatalf("counts %v", c)
	}
}

package node

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/placement"
)

// Cluster event kinds (api.ClusterEvent.Kind).
const (
	EventNodeAlive       = "node_alive"
	EventNodeSuspect     = "node_suspected"
	EventNodeDead        = "node_dead"
	EventNodeLeft        = "node_left"
	EventReplicaAdded    = "replica_added"
	EventReplicaPromoted = "replica_promoted"
	EventReplicaDemoted  = "replica_demoted"
	EventReplicaRemoved  = "replica_removed"
	EventReplicaDeleted  = "replica_deleted"
	EventLeaderMoved     = "leader_moved"
	EventDrainStarted    = "drain_started"
	EventDrainFinished   = "drain_finished"
	EventNodeRemoved     = "node_removed"
)

// eventCapacity is how many recent events a node keeps.
const eventCapacity = 256

// eventLog is a node's bounded ring of recent cluster events, with a count
// of every kind ever recorded (for /metrics). Each node records what it
// sees itself (gossip's view of the others, replicas it deleted) and, while
// it leads the metadata group, the placement controller's decisions.
type eventLog struct {
	mu     sync.Mutex
	ring   []api.ClusterEvent
	next   int
	counts map[string]uint64
}

func newEventLog() *eventLog {
	return &eventLog{counts: map[string]uint64{}}
}

// add records one event, dropping the oldest past eventCapacity.
func (l *eventLog) add(kind, node string, group uint64, detail string) {
	e := api.ClusterEvent{Ts: time.Now().UnixMilli(), Kind: kind, Node: node, Group: group, Detail: detail}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[kind]++
	if len(l.ring) < eventCapacity {
		l.ring = append(l.ring, e)
		return
	}
	l.ring[l.next] = e
	l.next = (l.next + 1) % eventCapacity
}

// list returns the events oldest first.
func (l *eventLog) list() []api.ClusterEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]api.ClusterEvent, 0, len(l.ring))
	out = append(out, l.ring[l.next:]...)
	return append(out, l.ring[:l.next]...)
}

// Counts returns how many events of each kind were recorded.
func (l *eventLog) Counts() map[string]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]uint64, len(l.counts))
	for k, v := range l.counts {
		out[k] = v
	}
	return out
}

// ClusterEvents implements api.ClusterAdmin: this node's events merged with
// the metadata leader's (which holds the placement decisions), oldest
// first, at most eventCapacity of them. The leader's are fetched over the
// internal transport; when it does not answer, this node's alone are shown.
func (n *Node) ClusterEvents(ctx context.Context) ([]api.ClusterEvent, error) {
	out := n.heal.events.list()
	if addr := n.metaLeaderAddr(); addr != "" && addr != n.self() {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		var rep callReply
		err := n.call(cctx, addr, methodEvents, nil, &rep)
		cancel()
		var theirs []api.ClusterEvent
		if err == nil && rep.err(placement.MetaGroup) == nil && json.Unmarshal(rep.Result, &theirs) == nil {
			out = append(out, theirs...)
		}
	}
	slices.SortStableFunc(out, func(a, b api.ClusterEvent) int { return cmp.Compare(a.Ts, b.Ts) })
	out = slices.CompactFunc(out, func(a, b api.ClusterEvent) bool { return a == b })
	if len(out) > eventCapacity {
		out = out[len(out)-eventCapacity:]
	}
	return out, nil
}

// localEvents answers the internal events call.
func (n *Node) localEvents() ([]byte, error) {
	return json.Marshal(n.heal.events.list())
}

// metaLeaderAddr returns the internal address of the metadata group's
// leader as this node knows it, "" when unknown.
func (n *Node) metaLeaderAddr() string {
	lead, _ := n.engine.Leader(placement.MetaGroup)
	if lead == 0 {
		return ""
	}
	a, _ := n.dir.AddrOf(lead)
	return a
}

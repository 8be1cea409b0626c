package node

import (
	"cmp"
	"context"
	"encoding/json"
	"github.com/parley-chat/parley/internal/partition"
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
	EventDiskFull        = "disk_full"
	EventDiskOK          = "disk_ok"
	EventClockJump       = "clock_jump"
	EventDiskSlow        = "disk_slow"
	EventDiskFast        = "disk_fast"
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

// ClusterEvents implements api.ClusterAdmin: the events of every node of
// the map merged, oldest first, exact duplicates dropped, at most
// eventCapacity of them (the newest). Every node's ring is gathered, not
// only the metadata leader's, so the decisions of a former leader are kept
// when leadership moves. The others' are fetched over the internal
// transport in parallel; a node that does not answer within a second is
// left out.
func (n *Node) ClusterEvents(ctx context.Context) ([]api.ClusterEvent, error) {
	out := n.heal.events.list()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, addr := range n.peerAddrs() {
		wg.Go(func() {
			theirs := n.remoteEvents(ctx, addr)
			mu.Lock()
			out = append(out, theirs...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return mergeEvents(out), nil
}

// peerAddrs returns the internal addresses of the map's other nodes.
func (n *Node) peerAddrs() []string {
	var out []string
	if m := n.Map(); m != nil {
		for _, nd := range m.Nodes {
			if nd.Addr != "" && nd.Addr != n.self() {
				out = append(out, nd.Addr)
			}
		}
	}
	return out
}

// remoteEvents returns the ring of the node at addr, nil when it does not
// answer within a second.
func (n *Node) remoteEvents(ctx context.Context, addr string) []api.ClusterEvent {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var rep partition.Reply
	var theirs []api.ClusterEvent
	if n.call(cctx, addr, methodEvents, nil, &rep) != nil || rep.Err(placement.MetaGroup) != nil ||
		json.Unmarshal(rep.Result, &theirs) != nil {
		return nil
	}
	return theirs
}

// mergeEvents sorts events by time (ties in a fixed order, so duplicates
// are adjacent), drops exact duplicates and keeps the newest eventCapacity.
func mergeEvents(evs []api.ClusterEvent) []api.ClusterEvent {
	slices.SortFunc(evs, func(a, b api.ClusterEvent) int {
		return cmp.Or(cmp.Compare(a.Ts, b.Ts), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Node, b.Node),
			cmp.Compare(a.Group, b.Group), cmp.Compare(a.Detail, b.Detail))
	})
	evs = slices.Compact(evs)
	if len(evs) > eventCapacity {
		evs = evs[len(evs)-eventCapacity:]
	}
	return evs
}

// callEvents answers the internal events call: this node's event ring.
func (n *Node) callEvents(context.Context, string, []byte) (partition.Reply, error) {
	b, err := json.Marshal(n.heal.events.list())
	return partition.Reply{Result: b}, err
}

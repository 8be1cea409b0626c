package node

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/metrics"
	"github.com/parley-chat/parley/internal/placement"
)

const (
	// lagWindow is the span of recent samples the lag report summarises.
	lagWindow = 10 * time.Second
	// lagRingSize bounds the samples kept per group: under a heavy load
	// the window is the last lagRingSize applies when that is shorter.
	lagRingSize = 2048
)

// lagRecorder keeps each local replica's recent lag samples (fed by the
// engine's OnLag on the driver loop, so it stays quick) and the node's
// apply lag histogram.
type lagRecorder struct {
	mu     sync.Mutex
	groups map[uint64]*lagRing
	hist   atomic.Pointer[metrics.ApplyLag]
}

// lagSample is one applied command's lag on a replica.
type lagSample struct {
	atMs    int64 // when it was applied
	ms      int64
	entries uint64
}

type lagRing struct {
	buf  [lagRingSize]lagSample
	next int // total samples written; buf[next%len] is the oldest
}

func (r *lagRecorder) setHistogram(h *metrics.ApplyLag) { r.hist.Store(h) }

// record implements multiraft.Config.OnLag.
func (r *lagRecorder) record(group uint64, leader bool, lagMs []int64, entries uint64) {
	now := time.Now().UnixMilli()
	if h := r.hist.Load(); h != nil {
		for _, ms := range lagMs {
			h.Observe(leader, time.Duration(ms)*time.Millisecond)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.groups == nil {
		r.groups = map[uint64]*lagRing{}
	}
	ring := r.groups[group]
	if ring == nil {
		ring = &lagRing{}
		r.groups[group] = ring
	}
	for _, ms := range lagMs {
		ring.buf[ring.next%lagRingSize] = lagSample{atMs: now, ms: ms, entries: entries}
		ring.next++
	}
}

// groupLag summarises one local replica's samples within the window.
type groupLag struct {
	Group      uint64        `json:"group"`
	Leader     bool          `json:"leader"`
	Samples    int           `json:"samples"`
	LagMs      api.Quantiles `json:"lag_ms"`
	LagEntries api.Quantiles `json:"lag_entries"`
}

// summary returns the lag of every local replica with samples since
// since (unix ms).
func (r *lagRecorder) summary(since int64) []groupLag {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []groupLag
	for g, ring := range r.groups {
		var ms, entries []int64
		for i := range min(ring.next, lagRingSize) {
			if s := ring.buf[i]; s.atMs >= since {
				ms = append(ms, s.ms)
				entries = append(entries, int64(s.entries))
			}
		}
		if len(ms) > 0 {
			out = append(out, groupLag{Group: g, Samples: len(ms), LagMs: quantiles(ms), LagEntries: quantiles(entries)})
		}
	}
	slices.SortFunc(out, func(a, b groupLag) int { return cmp.Compare(a.Group, b.Group) })
	return out
}

// quantiles sorts v and returns its p50, p99 and maximum (nearest rank).
func quantiles(v []int64) api.Quantiles {
	slices.Sort(v)
	at := func(q float64) int64 {
		i := int(q*float64(len(v))+0.999999) - 1
		return v[min(max(i, 0), len(v)-1)]
	}
	return api.Quantiles{P50: at(0.50), P99: at(0.99), Max: v[len(v)-1]}
}

// localLag is this node's answer to the lag call.
func (n *Node) localLag(now time.Time) []groupLag {
	out := n.ops.lag.summary(now.Add(-lagWindow).UnixMilli())
	for i := range out {
		if n.engine != nil {
			_, out[i].Leader = n.engine.Leader(out[i].Group)
		}
	}
	return out
}

// ClusterLag implements api.ClusterOps: every replica's lag over the last
// lagWindow, gathered from every node.
func (n *Node) ClusterLag(ctx context.Context) (*api.LagReport, error) {
	rep := &api.LagReport{WindowMs: lagWindow.Milliseconds(), Replicas: []api.ReplicaLag{}, Unreachable: []string{}}
	m := n.Map()
	if m == nil {
		return rep, nil
	}
	byNode := make([][]groupLag, len(m.Nodes))
	reached := make([]bool, len(m.Nodes))
	n.eachNode(ctx, m, func(i int, nd placement.Node) {
		reached[i] = n.ask(ctx, nd, methodLag, nil, &byNode[i]) == nil
	})
	for i, nd := range m.Nodes {
		if !reached[i] {
			rep.Unreachable = append(rep.Unreachable, nd.ID)
			continue
		}
		for _, gl := range byNode[i] {
			r, ok := m.ReplicaOn(gl.Group, nd.ID)
			if !ok {
				continue // a replica since removed from this node
			}
			role := "follower"
			switch {
			case gl.Leader:
				role = "leader"
			case r.Role == placement.RoleLearner:
				role = "learner"
			}
			rep.Replicas = append(rep.Replicas, api.ReplicaLag{
				Group: gl.Group, Node: nd.ID, Replica: r.ID, Role: role,
				Samples: gl.Samples, LagMs: gl.LagMs, LagEntries: gl.LagEntries,
			})
		}
	}
	slices.SortFunc(rep.Replicas, func(a, b api.ReplicaLag) int {
		if c := cmp.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return cmp.Compare(a.Node, b.Node)
	})
	return rep, nil
}

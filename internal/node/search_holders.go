package node

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/membership"
	"github.com/parley-chat/parley/internal/metrics"
	"github.com/parley-chat/parley/internal/placement"
)

// A node keeps the search index of a partition it no longer has to keep (a
// holder ahead of it came back, or the partition's replicas moved) for a
// handover: long enough for the new holder to build its index, so that a
// search finds one ready meanwhile. Building takes about as long on every
// replica, so the handover is searchHandoverBuilds times what this node's
// own index took, and at least searchHandoverMin.
const (
	searchHandoverBuilds = 3
	searchHandoverMin    = 5 * time.Second
)

// searchHandover returns how long this node keeps its index of partition g
// once it is no longer a holder.
func (n *Node) searchHandover(g uint64) time.Duration {
	built, ok := n.indexes.BuildTime(g)
	if !ok {
		return 0 // nothing ready to hand over
	}
	return max(searchHandoverMin, searchHandoverBuilds*built)
}

// searchHolders returns the first k of a partition's replicas (node ids,
// in its search order: searchOrder) that may keep its search index. Every
// node computes it from its own view of gossip, so just after a failure two
// nodes may briefly disagree.
func searchHolders(ordered []string, k int, eligible func(id string) bool) []string {
	var out []string
	for _, id := range ordered {
		if len(out) == k {
			break
		}
		if eligible(id) {
			out = append(out, id)
		}
	}
	return out
}

// searchOrder returns partition g's replicas in the order they are asked
// to keep its search index: by a hash of the partition and the node
// (rendezvous hashing), so the indexes of a cluster's partitions spread
// evenly over its nodes and a node's death or arrival changes the order of
// the other nodes in no partition.
func searchOrder(g uint64, replicas []string) []string {
	score := make(map[string]uint64, len(replicas))
	for _, id := range replicas {
		h := fnv.New64a()
		_, _ = fmt.Fprintf(h, "%d/%s", g, id)
		score[id] = h.Sum64()
	}
	out := slices.Clone(replicas)
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(score[a], score[b]) })
	return out
}

// searchEligible reports whether node id may keep search indexes: it keeps
// them (this node's configuration, or --no-search-index as the node
// gossips it) and gossip does not report it dead or gone. A node gossip
// has not heard of yet is eligible.
func (n *Node) searchEligible(id string) bool {
	if id == n.cfg.ID {
		return !n.cfg.NoSearchIndex
	}
	ml := n.heal.gossip.Load()
	if ml == nil {
		return true
	}
	mb, ok := ml.Member(id)
	if !ok {
		return true
	}
	return !mb.Meta.NoSearch && mb.State != membership.Dead && mb.State != membership.Left
}

// searchChoice remembers the partitions this node indexes: for each, the
// zero time while it is a search holder, else since when it is not (the
// handover).
type searchChoice struct {
	mu   sync.Mutex // before search.Indexes' (DESIGN.md, "Lock order")
	held map[uint64]time.Time
}

// searchReplicas returns the partition replicas this node keeps a search
// index of, each with its incarnation (an index is built again when its
// replica is): those it is a search holder of, and for searchHandover
// those it was one of.
func (n *Node) searchReplicas() map[uint64]any {
	out := map[uint64]any{}
	v := n.cmap.Load()
	if v == nil {
		return out
	}
	now := time.Now()
	n.searchChoice.mu.Lock()
	defer n.searchChoice.mu.Unlock()
	if n.searchChoice.held == nil {
		n.searchChoice.held = map[uint64]time.Time{}
	}
	held := n.searchChoice.held
	groups := n.engine.Groups()
	for g := range held {
		if !slices.Contains(groups, g) {
			delete(held, g) // the replica left this node: so did its index
		}
	}
	for _, g := range groups {
		if g == placement.MetaGroup {
			continue
		}
		holder := slices.Contains(searchHolders(searchOrder(g, v.nodesOf[g]), n.cfg.SearchReplicas, n.searchEligible), n.cfg.ID)
		since, indexed := held[g]
		switch {
		case holder:
			held[g] = time.Time{}
		case !indexed:
			continue
		case since.IsZero():
			held[g] = now
		case now.Sub(since) > n.searchHandover(g):
			delete(held, g)
			continue
		}
		out[g] = n.engine.Incarnation(g)
	}
	return out
}

// searchAddrs returns the internal addresses of group g's replicas a search
// asks, the search holders first.
func (n *Node) searchAddrs(g uint64) []string {
	v := n.cmap.Load()
	if v == nil {
		return nil
	}
	ids := searchOrder(g, v.nodesOf[g])
	first := searchHolders(ids, n.cfg.SearchReplicas, n.searchEligible)
	for _, id := range ids {
		if !slices.Contains(first, id) {
			first = append(first, id)
		}
	}
	out := make([]string, 0, len(first))
	for _, id := range first {
		if nd, ok := v.m.Node(id); ok {
			out = append(out, nd.Addr)
		}
	}
	return out
}

// SearchIndexes returns the partitions this node keeps a chat search index
// of (ready or being built).
func (n *Node) SearchIndexes() []uint64 { return n.indexes.Partitions() }

// searchStats counts this node's search indexes for /metrics.
func (n *Node) searchStats() metrics.SearchStats {
	var s metrics.SearchStats
	for _, p := range n.indexes.Partitions() {
		if _, ready := n.indexes.BuildTime(p); ready {
			s.Ready++
		} else {
			s.Building++
		}
	}
	return s
}

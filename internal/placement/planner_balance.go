package placement

import (
	"cmp"
	"fmt"
	"slices"
)

func (p *planner) balanceReplicas(settled []*groupState) {
	done := map[uint64]bool{}
	for p.moves < p.maxMoves {
		var bg *groupState
		var bsrc, bdst string
		bdiff := 1
		for _, st := range settled {
			if done[st.g.ID] || len(st.bad) > 0 {
				continue
			}
			for _, src := range st.good {
				sv := p.node(src.Node)
				if !sv.up {
					continue
				}
				for _, dst := range st.pool.nodes {
					dv := p.node(dst)
					if !dv.up || dv.diskFull || dv.standby != sv.standby || st.holds(dst) ||
						dv.zone != sv.zone && st.zoneGood[dv.zone] >= st.pool.zoneMax[dv.zone] {
						continue
					}
					if d := p.counts[src.Node] - p.counts[dst]; d > bdiff {
						bg, bsrc, bdst, bdiff = st, src.Node, dst, d
					}
				}
			}
		}
		if bg == nil {
			return
		}
		done[bg.g.ID] = true
		p.add(Step{Kind: StepAddReplica, Group: bg.g.ID, Node: bdst,
			Reason: fmt.Sprintf("rebalance: %s holds %d replicas, %s %d", bsrc, p.counts[bsrc], bdst, p.counts[bdst])})
		p.counts[bdst]++
		p.counts[bsrc]--
		p.moves++
	}
}

// balanceLeaders evens out partition leaders, at most MaxMoves transfers
// per plan (a chain may overrun the last few): first leaders off the pool
// move to it, then leadership moves along a chain of transfers from a node
// leading the most to one leading at least two fewer (the nodes between lose
// and gain one each), each group at most once per plan.
func (p *planner) balanceLeaders(settled []*groupState) {
	used := map[uint64]bool{}
	for budget := p.maxMoves; budget > 0; {
		path := p.leaderPath(settled, used)
		if len(path) == 0 {
			return
		}
		for _, h := range path {
			p.add(Step{Kind: StepTransferLeader, Group: h.st.g.ID, Node: h.to.Node, Replica: h.to.ID,
				Reason: fmt.Sprintf("balance leaders: %s leads %d, %s %d", h.from, p.leaders[h.from], h.to.Node, p.leaders[h.to.Node])})
			p.leaders[h.from]--
			p.leaders[h.to.Node]++
			used[h.st.g.ID] = true
			budget--
		}
	}
}

// hop is one leadership transfer of a chain.
type hop struct {
	st   *groupState
	from string
	to   Replica
}

func (p *planner) leaderPath(settled []*groupState, used map[uint64]bool) []hop {
	edges := map[string][]hop{}
	for _, st := range settled {
		from, ok := replicaNode(st.g, st.view.Leader)
		if !ok || used[st.g.ID] {
			continue
		}
		var best *hop
		for _, v := range st.voters {
			if nv := p.node(v.Node); v.ID == st.view.Leader || !st.caught[v.ID] || !nv.up || nv.silent || !st.pool.in[v.Node] {
				continue
			}
			h := hop{st: st, from: from, to: v}
			edges[from] = append(edges[from], h)
			if best == nil || p.leaders[v.Node] < p.leaders[best.to.Node] {
				best = &h
			}
		}
		if best != nil && !st.pool.in[from] {
			return []hop{*best} // a leader off the pool moves first
		}
	}
	sources := slices.Clone(p.part.nodes)
	slices.SortStableFunc(sources, func(a, b string) int { return cmp.Compare(p.leaders[b], p.leaders[a]) })
	for _, src := range sources {
		// Breadth-first over transfers, shortest chains first.
		via := map[string]hop{}
		seen := map[string]bool{src: true}
		queue := []string{src}
		end := ""
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, h := range edges[n] {
				if seen[h.to.Node] {
					continue
				}
				seen[h.to.Node] = true
				via[h.to.Node] = h
				queue = append(queue, h.to.Node)
				if p.leaders[h.to.Node] <= p.leaders[src]-2 && (end == "" || p.leaders[h.to.Node] < p.leaders[end]) {
					end = h.to.Node
				}
			}
		}
		if end == "" {
			continue
		}
		var path []hop
		for n := end; n != src; n = via[n].from {
			path = append(path, via[n])
		}
		slices.Reverse(path)
		return path
	}
	return nil
}

func replicaNode(g *Group, id uint64) (string, bool) {
	for _, r := range g.Replicas {
		if r.ID == id {
			return r.Node, true
		}
	}
	return "", false
}

// stranded reports whether group g's replica on a draining node has nowhere
// to go: the pool is smaller than RF and every pool node already holds a

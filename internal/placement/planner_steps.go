package placement

import (
	"cmp"
	"slices"
)

func (p *planner) rank(st *groupState, rs []Replica) []Replica {
	key := func(r Replica) [7]int {
		nv := p.node(r.Node)
		off := 3
		switch {
		case nv.gone:
			off = 0
		case nv.draining:
			off = 1
		case !st.pool.in[r.Node]:
			off = 2
		}
		zone := 1
		if off == 3 && st.zoneGood[nv.zone] > st.pool.zoneMax[nv.zone] {
			zone = 0
		}
		lead := 0
		if r.ID == st.view.Leader {
			lead = 1
		}
		// The newest replica is the one a move brought in: it stays.
		newest := b2i(off == 3 && r.ID == st.newest)
		return [7]int{off, newest, zone, b2i(!nv.standby), b2i(nv.up), -p.settled[r.Node], lead}
	}
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b Replica) int {
		ka, kb := key(a), key(b)
		if c := slices.Compare(ka[:], kb[:]); c != 0 {
			return c
		}
		return cmp.Compare(b.Node, a.Node)
	})
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// drop removes (or, in the metadata group, demotes) voter r, handing
// leadership over first when r leads.
func (p *planner) drop(st *groupState, r Replica, why string) {
	if !p.safeToDrop(st, r) {
		return
	}
	if r.ID == st.view.Leader {
		if to, ok := p.transferTarget(st, r.ID); ok {
			p.add(Step{Kind: StepTransferLeader, Group: st.g.ID, Node: to.Node, Replica: to.ID, Reason: "leader's replica is leaving: " + why})
		}
		return
	}
	kind := StepRemoveReplica
	if st.meta {
		kind = StepDemote
	}
	p.add(Step{Kind: kind, Group: st.g.ID, Node: r.Node, Replica: r.ID, Reason: why})
}

// transferTarget picks the caught-up live voter with the fewest leaders,
// never one on a node that has gone silent.
func (p *planner) transferTarget(st *groupState, not uint64) (Replica, bool) {
	var best Replica
	found := false
	for _, v := range st.voters {
		if nv := p.node(v.Node); v.ID == not || !st.caught[v.ID] || !nv.up || nv.silent {
			continue
		}
		if !found || p.leaders[v.Node] < p.leaders[best.Node] ||
			p.leaders[v.Node] == p.leaders[best.Node] && v.Node < best.Node {
			best, found = v, true
		}
	}
	return best, found
}

func (p *planner) why(st *groupState, r Replica) string {
	nv, known := p.nodes[r.Node]
	switch {
	case !known:
		return "node left the map"
	case nv.gone:
		return "node dead beyond dead-after"
	case nv.draining:
		return "node draining"
	case !st.pool.in[r.Node] && nv.standby:
		return "standby no longer needed"
	case !st.pool.in[r.Node]:
		return "node not eligible"
	}
	return "replaced by a better placed replica"
}

// unstick undoes a promotion that cannot finish because the learner's node
// died: the group would otherwise wait for it forever.
func (p *planner) unstick(st *groupState) {
	gv, ok := p.applied[st.g.ID]
	if !ok || gv.Pending || gv.Leader == 0 {
		return
	}
	for _, r := range st.voters {
		if !slices.Contains(gv.Voters, r.ID) && p.node(r.Node).dead {
			kind := StepRemoveReplica
			if st.meta {
				kind = StepDemote
			}
			p.add(Step{Kind: kind, Group: st.g.ID, Node: r.Node, Replica: r.ID, Reason: "promotion stuck on a dead node"})
			return
		}
	}
}

// planMeta keeps the metadata group at its voter target, zone-spread, with a
// learner on every other live node.
func (p *planner) planMeta() {
	st := p.states[MetaGroup]
	p.checkDrain(st)
	if !st.settled {
		p.unstick(st)
		return
	}
	if len(st.voters) > st.target {
		w := p.rank(st, st.voters)[0]
		p.drop(st, w, p.why(st, w))
		return
	}
	if len(st.good) < st.target || st.zoneOver() {
		var best *Replica
		for _, r := range p.rankPromote(st) {
			z := p.node(r.Node).zone
			if len(st.good) >= st.target && st.zoneGood[z] >= st.pool.zoneMax[z] {
				continue // a zone fix must land in a zone below its share
			}
			best = &r
			break
		}
		if best != nil {
			reason := "metadata voters below target"
			if len(st.good) >= st.target {
				reason = "zone spread"
			}
			p.add(Step{Kind: StepPromote, Group: MetaGroup, Node: best.Node, Replica: best.ID, Reason: reason})
			return
		}
	}
	for _, n := range p.m.Nodes {
		if nv := p.node(n.ID); nv.up && !nv.diskFull && !st.holds(n.ID) {
			p.add(Step{Kind: StepAddReplica, Group: MetaGroup, Node: n.ID, Reason: "every node follows the map"})
			return
		}
	}
}

// rankPromote returns the metadata learners that may become voters, best
// first: regular before standby, zones with fewer voters first.
func (p *planner) rankPromote(st *groupState) []Replica {
	var out []Replica
	for _, r := range st.learners {
		if st.pool.in[r.Node] && p.safeToPromote(st, r) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Replica) int {
		na, nb := p.node(a.Node), p.node(b.Node)
		return cmp.Or(
			cmp.Compare(b2i(na.standby), b2i(nb.standby)),
			cmp.Compare(st.zoneGood[na.zone], st.zoneGood[nb.zone]),
			cmp.Compare(a.Node, b.Node))
	})
	return out
}

// partitionStep plans a partition's step that needs no move budget: deal
// with a learner (promote it, drop it, or wait for it) or drop the worst
// voter of a group over its target. It reports whether the group is done
// for this plan.
func (p *planner) partitionStep(st *groupState) bool {
	if len(st.learners) > 0 {
		l := st.learners[0]
		nv := p.node(l.Node)
		switch {
		case !st.pool.in[l.Node] || nv.dead:
			p.add(Step{Kind: StepRemoveReplica, Group: st.g.ID, Node: l.Node, Replica: l.ID, Reason: "learner's node no longer usable"})
		case p.safeToPromote(st, l):
			p.add(Step{Kind: StepPromote, Group: st.g.ID, Node: l.Node, Replica: l.ID, Reason: "learner caught up"})
			// From one voter, a second learner caught up as well is promoted
			// in the same plan: the group's leader then promotes both in one
			// joint change (NextConfChange), and the group goes from one
			// voter to three without passing through two, which a single
			// death would stop.
			if len(st.voters) == 1 {
				for _, o := range st.learners[1:] {
					if st.pool.in[o.Node] && !p.node(o.Node).dead && p.safeToPromote(st, o) {
						p.add(Step{Kind: StepPromote, Group: st.g.ID, Node: o.Node, Replica: o.ID, Reason: "learner caught up, with another"})
						break
					}
				}
			}
		}
		return true
	}
	if len(st.voters) > st.target {
		w := p.rank(st, st.voters)[0]
		p.drop(st, w, p.why(st, w))
		return true
	}
	return false
}

// pickAdd chooses the node for a new replica of st: a live pool node without
// one whose disk is not full, regular before standby, in a zone below its share (only those for a
// zone fix), the zone with the fewest replicas of the group, the node with
// the fewest replicas, the smallest id.
func (p *planner) pickAdd(st *groupState, zoneFix bool) string {
	best, bestKey := "", [5]int{}
	for _, n := range st.pool.nodes {
		nv := p.node(n)
		if !nv.up || nv.diskFull || st.holds(n) {
			continue
		}
		full := b2i(st.zoneGood[nv.zone] >= st.pool.zoneMax[nv.zone])
		if zoneFix && full == 1 {
			continue
		}
		key := [5]int{b2i(nv.standby), full, st.zoneGood[nv.zone], p.counts[n]}
		if best == "" || slices.Compare(key[:], bestKey[:]) < 0 {
			best, bestKey = n, key
		}
	}
	return best
}

// balanceReplicas moves replicas from the fullest nodes to the emptiest,
// within the move budget, never breaking zone spread.

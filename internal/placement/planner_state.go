package placement

import (
	"slices"
)

type nodeView struct {
	zone     string
	standby  bool
	draining bool
	up       bool // alive: may receive replicas, counts as a live voter
	silent   bool // not heard lately, disk full or slow, shutting down: gets no leadership (NodeHealth)
	diskFull bool // disk below its reserve: gets no new replica either (it could not store it)
	dead     bool // declared dead, for any time
	gone     bool // dead for DeadAfter or longer, or not in the map
}

// pool is the set of nodes that should hold a kind of group (partitions or
// the metadata group's voters) and how many each group wants there.
type pool struct {
	nodes   []string
	in      map[string]bool
	target  int
	zoneMax map[string]int
}

type planner struct {
	m        *Map
	nodes    map[string]nodeView
	part     pool
	meta     pool
	settled  map[string]int // partition voters per node, less moves' newest
	counts   map[string]int // replicas, less those about to go, plus planned adds
	leaders  map[string]int // partition leaders per node, with planned transfers
	applied  map[uint64]GroupView
	states   []*groupState // by group id
	moves    int
	maxMoves int
	steps    []Step
	changed  bool // a map change is planned
	drain    map[string][]uint64
}

func newPlanner(v View) *planner {
	p := &planner{
		m: v.Map, nodes: map[string]nodeView{}, applied: v.Applied,
		settled: map[string]int{}, counts: map[string]int{}, leaders: map[string]int{},
		maxMoves: max(1, v.MaxMoves), drain: map[string][]uint64{},
	}
	var regular, standby []string
	for _, n := range p.m.Nodes {
		h := v.Health[n.ID]
		nv := nodeView{zone: n.Zone, standby: n.Standby, draining: n.State == NodeDraining}
		nv.up = h.State == "" || h.State == HealthAlive
		nv.silent = h.Silent || h.DiskFull || h.DiskSlow || h.Leaving // any way: no leadership
		nv.diskFull = h.DiskFull
		nv.dead = h.State == HealthDead
		nv.gone = nv.dead && h.DeadFor >= v.DeadAfter
		p.nodes[n.ID] = nv
		if n.State != NodeActive || nv.gone {
			continue
		}
		if n.Standby {
			standby = append(standby, n.ID)
		} else {
			regular = append(regular, n.ID)
		}
	}
	p.part = p.newPool(regular, standby, max(1, p.m.ReplicationFactor))
	p.meta = p.newPool(regular, standby, max(1, p.m.MetaVoters))
	p.meta.target = max(1, p.meta.target)
	for gi := range p.m.Groups {
		g := &p.m.Groups[gi]
		p.states = append(p.states, p.state(g))
		if g.ID == MetaGroup {
			continue
		}
		st := p.states[gi]
		for _, r := range g.Replicas {
			p.counts[r.Node]++
			if r.Role == RoleLearner {
				p.moves++
			} else if len(g.Replicas) <= st.target || r.ID != st.newest {
				p.settled[r.Node]++
			}
		}
		if gv, ok := p.applied[g.ID]; ok && gv.Leader != 0 {
			if n, ok := replicaNode(g, gv.Leader); ok {
				p.leaders[n]++
			}
		}
	}
	// A group over its target is about to lose its worst replicas: count
	// them gone already, so moves in flight are not planned twice.
	for _, st := range p.states[1:] {
		if extra := len(st.g.Replicas) - st.target; extra > 0 {
			for _, r := range p.rank(st, st.g.Replicas)[:extra] {
				p.counts[r.Node]--
			}
		}
	}
	return p
}

// newPool picks the regular nodes, or regular and standby nodes when there
// are fewer regular ones than want, and each zone's share of the target:
// the lowest level L with sum over zones of min(nodes in zone, L) >= target.
func (p *planner) newPool(regular, standby []string, want int) pool {
	nodes := regular
	if len(regular) < want {
		nodes = append(slices.Clone(regular), standby...)
		slices.Sort(nodes)
	}
	pl := pool{nodes: nodes, in: map[string]bool{}, target: min(want, len(nodes)), zoneMax: map[string]int{}}
	size := map[string]int{}
	for _, n := range nodes {
		pl.in[n] = true
		size[p.nodes[n].zone]++
	}
	for level := 0; ; level++ {
		sum := 0
		for _, c := range size {
			sum += min(c, level)
		}
		if sum >= pl.target {
			for z, c := range size {
				pl.zoneMax[z] = min(c, level)
			}
			return pl
		}
	}
}

func (p *planner) node(id string) nodeView {
	if nv, ok := p.nodes[id]; ok {
		return nv
	}
	return nodeView{gone: true, dead: true}
}

func (p *planner) add(s Step) {
	p.steps = append(p.steps, s)
	if s.Kind != StepTransferLeader {
		p.changed = true
	}
}

// groupState is one group as Plan sees it.
type groupState struct {
	g        *Group
	meta     bool
	view     GroupView
	settled  bool
	pool     *pool
	target   int // replicas wanted, counting ones with nowhere to go
	voters   []Replica
	learners []Replica
	good     []Replica // voters on pool nodes
	bad      []Replica // voters elsewhere
	zoneGood map[string]int
	caught   map[uint64]bool
	newest   uint64 // the highest replica id
	prio     int
	zoneFix  bool
	adding   []string // nodes this plan adds a replica on
}

func (p *planner) state(g *Group) *groupState {
	st := &groupState{g: g, meta: g.ID == MetaGroup, pool: &p.part, zoneGood: map[string]int{}, caught: map[uint64]bool{}}
	if st.meta {
		st.pool = &p.meta
	}
	var gv GroupView
	gv, st.settled = p.applied[g.ID]
	st.view = gv
	for _, id := range gv.CaughtUp {
		st.caught[id] = true
	}
	holders := map[string]bool{}
	for _, n := range st.pool.nodes {
		holders[n] = true
	}
	for _, r := range g.Replicas {
		st.newest = max(st.newest, r.ID)
		if r.Role == RoleVoter {
			st.voters = append(st.voters, r)
			holders[r.Node] = true
			if st.pool.in[r.Node] {
				st.good = append(st.good, r)
				st.zoneGood[p.node(r.Node).zone]++
			} else {
				st.bad = append(st.bad, r)
			}
		} else {
			st.learners = append(st.learners, r)
		}
	}
	if st.meta {
		st.target = st.pool.target
	} else {
		st.target = min(max(1, p.m.ReplicationFactor), len(holders))
	}
	st.settled = st.settled && !gv.Pending && gv.Leader != 0 && sameMembers(gv, g)
	return st
}

// sameMembers reports whether the applied membership is what the map says.
func sameMembers(gv GroupView, g *Group) bool {
	if len(gv.Voters)+len(gv.Learners) != len(g.Replicas) {
		return false
	}
	for _, r := range g.Replicas {
		want := gv.Learners
		if r.Role == RoleVoter {
			want = gv.Voters
		}
		if !slices.Contains(want, r.ID) {
			return false
		}
	}
	return true
}

func (st *groupState) zoneOver() bool {
	for z, c := range st.zoneGood {
		if c > st.pool.zoneMax[z] {
			return true
		}
	}
	return false
}

func (st *groupState) holds(node string) bool {
	return slices.Contains(st.adding, node) || slices.ContainsFunc(st.g.Replicas, func(r Replica) bool { return r.Node == node })
}

// addsFor is how many replicas one plan adds to an under-replicated group:
// two to a group on one voter that wants three (the default replication
// factor), so that its leader adds both as learners before it promotes
// either and promotes them together, in one joint change (NextConfChange):
// one voter becomes three without passing through two, which a single death
// would stop. Otherwise one. (Other targets keep one: with five nodes, RF 4
// and three zones, two adds at once led the planner simulation's
// rebalancing into a cycle.)
func (p *planner) addsFor(st *groupState) int {
	if !st.zoneFix && len(st.good) == 1 && st.target == 3 {
		return 2
	}
	return 1
}

func majority(n int) int { return n/2 + 1 }

func (p *planner) live(rs []Replica) int {
	n := 0
	for _, r := range rs {
		if p.node(r.Node).up {
			n++
		}
	}
	return n
}

// safeToDrop reports whether the group keeps a live majority, of its new
// membership and of its target, without voter r.
func (p *planner) safeToDrop(st *groupState, r Replica) bool {
	rest := slices.DeleteFunc(slices.Clone(st.voters), func(v Replica) bool { return v.ID == r.ID })
	live := p.live(rest)
	return len(rest) > 0 && live >= majority(len(rest)) && live >= majority(st.target)
}

// safeToPromote reports whether the group keeps a live majority with r as a
// voter too.
func (p *planner) safeToPromote(st *groupState, r Replica) bool {
	return p.node(r.Node).up && st.caught[r.ID] && p.live(st.voters)+1 >= majority(len(st.voters)+1)
}

// rank orders replicas worst first, the order in which they are removed:
// off the pool (gone, draining, unneeded standby), not the newest (which a
// move just brought in), in a zone over its share, on a standby, down, on the
// node with the most settled replicas, not the leader, then by node id.

package placement

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The placement controller decides, on the metadata leader, how the cluster
// map moves towards its target layout. Plan is a pure function of a View (the
// map, what gossip says about each node and what each group has applied), so
// tests drive it step by step. Its rules, in priority order:
//
//   - Eligible nodes are active, not standby, not draining and not dead for
//     DeadAfter or longer. Standby nodes join the pool only while there are
//     fewer eligible nodes than the replication factor.
//   - Every partition has min(RF, pool) replicas and the metadata group
//     max(1, min(MetaVoters, pool)) voters; the metadata group also keeps a
//     learner on every other node so that each node follows the map.
//   - Replicas spread across zones: a zone holds at most its share of the
//     target (ceil(target/zones), less where a zone has fewer nodes). Zone
//     spread wins over even counts.
//   - Replica counts, then leader counts, are evened out to within one per
//     node, by moving replicas and by transferring leadership.
//   - A replica is replaced by adding a learner, promoting it once caught up,
//     and only then removing the replica it replaces; a voter is removed only
//     when a majority of the group's target voters stays alive, and never
//     while it leads (leadership is handed over first).
//   - A replica of a node that is dead but not yet for DeadAfter stays put:
//     a plain restart is not a departure. A replica with nowhere to go stays
//     too, so a shrinking pool never takes a partition below RF.
//   - Each group gets at most one step per plan, and none while its applied
//     membership differs from the map (one change in flight per group); at
//     most MaxMoves learners are being added cluster-wide.

// Gossip health states of a node (NodeHealth.State).
const (
	HealthAlive   = "alive"
	HealthSuspect = "suspect"
	HealthDead    = "dead"
)

// NodeHealth is what failure detection says about a node.
type NodeHealth struct {
	// State is HealthAlive, HealthSuspect or HealthDead; empty means alive.
	State string
	// DeadFor is how long the node has been dead (State HealthDead).
	DeadFor time.Duration
}

// GroupView is the applied state of one Raft group, as its leader reports it.
type GroupView struct {
	// Voters and Learners are the applied membership (replica ids).
	Voters   []uint64
	Learners []uint64
	// Leader is the leader's replica id, 0 when there is none.
	Leader uint64
	// CaughtUp are the replicas that have everything the leader committed
	// (a learner among them may be promoted).
	CaughtUp []uint64
	// Pending is set while a membership change is proposed but not applied,
	// or a joint configuration is still being left.
	Pending bool
}

// View is everything Plan looks at.
type View struct {
	// Map is the cluster map; draining nodes have State NodeDraining.
	Map *Map
	// Health is gossip's view by node id; a node missing is taken as alive.
	Health map[string]NodeHealth
	// Applied is each group's applied state by group id; a group missing,
	// pending or without a leader gets no step.
	Applied map[uint64]GroupView
	// DeadAfter is how long a node must be dead before its replicas are
	// rebuilt elsewhere.
	DeadAfter time.Duration
	// MaxMoves bounds the learners being added at once, cluster-wide, and
	// the leadership transfers per plan; below 1 it is 1.
	MaxMoves int
}

// StepKind names what a Step does.
type StepKind string

// Step kinds. AddReplica adds a learner on Node; Promote and Demote change a
// replica's role; RemoveReplica drops one; TransferLeader hands a group's
// leadership to Replica.
const (
	StepAddReplica     StepKind = "add_replica"
	StepPromote        StepKind = "promote"
	StepDemote         StepKind = "demote"
	StepRemoveReplica  StepKind = "remove_replica"
	StepTransferLeader StepKind = "transfer_leader"
)

// Step is one decision of the controller.
type Step struct {
	Kind  StepKind
	Group uint64
	// Node is where a replica is added, or the node of Replica.
	Node string
	// Replica is the replica promoted, demoted or removed, or the one that
	// receives leadership; 0 for AddReplica (the map assigns the id).
	Replica uint64
	// Reason says why, for logs and the cluster event list.
	Reason string
}

// Command returns the metadata command that carries out s, or nil for
// TransferLeader, which is not a map change: the wiring asks the group's
// leader to hand over.
func (s Step) Command() *Command {
	switch s.Kind {
	case StepAddReplica:
		return &Command{Op: OpAddReplica, Group: s.Group, NodeID: s.Node, Role: RoleLearner}
	case StepPromote:
		return &Command{Op: OpSetRole, Group: s.Group, Replica: s.Replica, Role: RoleVoter}
	case StepDemote:
		return &Command{Op: OpSetRole, Group: s.Group, Replica: s.Replica, Role: RoleLearner}
	case StepRemoveReplica:
		return &Command{Op: OpRemoveReplica, Group: s.Group, Replica: s.Replica}
	}
	return nil
}

func (s Step) String() string {
	return fmt.Sprintf("%s group %d node %s replica %d (%s)", s.Kind, s.Group, s.Node, s.Replica, s.Reason)
}

// ErrDrainImpossible is matched (errors.Is) by every DrainError.
var ErrDrainImpossible = errors.New("drain impossible")

// DrainError says that a draining node holds replicas that have nowhere to
// go: every eligible node already holds a replica of those groups.
type DrainError struct {
	Node   string
	Groups []uint64
}

func (e *DrainError) Error() string {
	gs := make([]string, len(e.Groups))
	for i, g := range e.Groups {
		gs[i] = fmt.Sprint(g)
	}
	return fmt.Sprintf("cannot drain node %s: no other eligible node can take its replica of group %s (add a node first)",
		e.Node, strings.Join(gs, ", "))
}

// Is makes errors.Is(err, ErrDrainImpossible) hold.
func (e *DrainError) Is(target error) bool { return target == ErrDrainImpossible }

// CheckDrain reports whether draining node can complete with the nodes the
// map has now, so the CLI can refuse an impossible drain upfront: every group
// with a replica on it needs another eligible node without one.
func CheckDrain(m *Map, node string) error {
	nd, ok := m.Node(node)
	if !ok {
		return fmt.Errorf("no such node %q", node)
	}
	if nd.State == NodeDraining {
		return nil
	}
	view := View{Map: m.Clone()}
	d, _ := view.Map.Node(node)
	d.State = NodeDraining
	p := newPlanner(view)
	var groups []uint64
	for _, st := range p.states {
		if st.holds(node) && p.stranded(st.g, node) {
			groups = append(groups, st.g.ID)
		}
	}
	if len(groups) > 0 {
		return &DrainError{Node: node, Groups: groups}
	}
	return nil
}

// Plan returns the next steps towards the target layout, at most one per
// group, or none when the cluster is there (or waiting for changes in
// flight). The error, when not nil, joins a DrainError per draining node
// whose replicas cannot all move; the steps are valid regardless.
func Plan(v View) ([]Step, error) {
	if v.Map == nil || len(v.Map.Groups) == 0 {
		return nil, nil
	}
	p := newPlanner(v)
	p.planMeta()
	var adds, settled []*groupState
	for _, st := range p.states[1:] {
		p.checkDrain(st)
		if !st.settled {
			p.unstick(st)
			continue
		}
		if p.partitionStep(st) {
			continue
		}
		switch {
		case len(st.good) < st.pool.target:
			st.prio = len(st.good) - st.pool.target // most degraded first
			adds = append(adds, st)
		case st.zoneOver():
			st.prio, st.zoneFix = 1, true
			adds = append(adds, st)
		default:
			settled = append(settled, st)
		}
	}
	slices.SortStableFunc(adds, func(a, b *groupState) int { return cmp.Compare(a.prio, b.prio) })
	for _, st := range adds {
		if p.moves >= p.maxMoves {
			break
		}
		if n := p.pickAdd(st, st.zoneFix); n != "" {
			reason := "under-replicated"
			if st.zoneFix {
				reason = "zone spread"
			}
			p.add(Step{Kind: StepAddReplica, Group: st.g.ID, Node: n, Reason: reason})
			p.counts[n]++
			p.moves++
		}
	}
	p.balanceReplicas(settled)
	if !p.changed {
		p.balanceLeaders(settled)
	}
	return p.steps, p.drainErr()
}

type nodeView struct {
	zone     string
	standby  bool
	draining bool
	up       bool // alive: may receive replicas, counts as a live voter
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
	return slices.ContainsFunc(st.g.Replicas, func(r Replica) bool { return r.Node == node })
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

// transferTarget picks the caught-up live voter with the fewest leaders.
func (p *planner) transferTarget(st *groupState, not uint64) (Replica, bool) {
	var best Replica
	found := false
	for _, v := range st.voters {
		if v.ID == not || !st.caught[v.ID] || !p.node(v.Node).up {
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
		if p.node(n.ID).up && !st.holds(n.ID) {
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
// one, regular before standby, in a zone below its share (only those for a
// zone fix), the zone with the fewest replicas of the group, the node with
// the fewest replicas, the smallest id.
func (p *planner) pickAdd(st *groupState, zoneFix bool) string {
	best, bestKey := "", [5]int{}
	for _, n := range st.pool.nodes {
		nv := p.node(n)
		if !nv.up || st.holds(n) {
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
					if !dv.up || dv.standby != sv.standby || st.holds(dst) ||
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
			if v.ID == st.view.Leader || !st.caught[v.ID] || !p.node(v.Node).up || !st.pool.in[v.Node] {
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
// replica (for the metadata group, whose voter target shrinks with the pool,
// only when the pool is empty).
func (p *planner) stranded(g *Group, node string) bool {
	if g.ID == MetaGroup {
		r, _ := p.m.ReplicaOn(g.ID, node)
		return r.Role == RoleVoter && len(p.meta.nodes) == 0
	}
	if len(p.part.nodes) >= max(1, p.m.ReplicationFactor) {
		return false
	}
	for _, n := range p.part.nodes {
		if _, ok := p.m.ReplicaOn(g.ID, n); !ok {
			return false
		}
	}
	return true
}

func (p *planner) checkDrain(st *groupState) {
	for _, r := range st.g.Replicas {
		if p.node(r.Node).draining && p.stranded(st.g, r.Node) {
			p.drain[r.Node] = append(p.drain[r.Node], st.g.ID)
		}
	}
}

func (p *planner) drainErr() error {
	var errs []error
	for _, n := range p.m.Nodes {
		if gs := p.drain[n.ID]; len(gs) > 0 {
			errs = append(errs, &DrainError{Node: n.ID, Groups: gs})
		}
	}
	return errors.Join(errs...)
}

package placement

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

const simDeadAfter = time.Minute

// simGroup is a group's applied Raft state in the simulation.
type simGroup struct {
	voters, learners map[uint64]bool
	leader           uint64
	caught           map[uint64]bool
}

// sim drives Plan against a simulated cluster: the map changes through the
// real state machine, each group's leader makes its applied membership follow
// the map one change at a time (as node.reconcile does, plus demotion), a new
// replica catches up a round after it is added, and a group with a live
// majority of voters always has a leader. With rng set, each of those
// happens only some of the time.
type sim struct {
	t        testing.TB
	m        *Map
	health   map[string]NodeHealth
	groups   []*simGroup
	maxMoves int
	rng      *rand.Rand
	err      error    // Plan's last error
	log      []string // recent steps, for failure messages
	replica  bool     // a map change was planned since the last reset
}

func newSim(t testing.TB, partitions, rf, metaVoters, maxMoves int, first Node) *sim {
	t.Helper()
	s := &sim{t: t, m: &Map{}, health: map[string]NodeHealth{}, maxMoves: maxMoves}
	mustOK(t, apply(s.m, &Command{Op: OpCreate, ClusterID: "c", Partitions: partitions, ReplicationFactor: rf, MetaVoters: metaVoters, Node: &first}))
	for _, g := range s.m.Groups {
		id := g.Replicas[0].ID
		s.groups = append(s.groups, &simGroup{voters: map[uint64]bool{id: true}, learners: map[uint64]bool{}, leader: id, caught: map[uint64]bool{id: true}})
	}
	return s
}

func mustOK(t testing.TB, r Result) {
	t.Helper()
	if r.Error != "" {
		t.Fatal(r.Error)
	}
}

func (s *sim) addNode(n Node) {
	s.t.Helper()
	mustOK(s.t, apply(s.m, &Command{Op: OpAddNode, Node: &n}))
}

func (s *sim) up(node string) bool {
	h := s.health[node].State
	return h == "" || h == HealthAlive
}

func (s *sim) nodeOf(g uint64, id uint64) string {
	n, _ := replicaNode(&s.m.Groups[g], id)
	return n
}

func sortedKeys(m map[uint64]bool) []uint64 {
	var out []uint64
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func (s *sim) view() View {
	v := View{Map: s.m.Clone(), Health: map[string]NodeHealth{}, Applied: map[uint64]GroupView{}, DeadAfter: simDeadAfter, MaxMoves: s.maxMoves}
	for k, h := range s.health {
		v.Health[k] = h
	}
	for gid, sg := range s.groups {
		gv := GroupView{Voters: sortedKeys(sg.voters), Learners: sortedKeys(sg.learners), Leader: sg.leader}
		for _, id := range sortedKeys(sg.caught) {
			if (sg.voters[id] || sg.learners[id]) && s.up(s.nodeOf(uint64(gid), id)) {
				gv.CaughtUp = append(gv.CaughtUp, id)
			}
		}
		v.Applied[uint64(gid)] = gv
	}
	return v
}

func (s *sim) chance() bool { return s.rng == nil || s.rng.IntN(3) > 0 }

func (s *sim) fail(format string, args ...any) {
	s.t.Helper()
	tail := s.log[max(0, len(s.log)-20):]
	s.t.Fatalf(format+"\nrecent steps:\n  %s", append(args, strings.Join(tail, "\n  "))...)
}

// round runs one plan and one round of the groups; it reports whether
// anything happened.
func (s *sim) round() bool {
	s.t.Helper()
	busy := false
	for gid, sg := range s.groups { // health may have changed since the last round
		busy = s.elect(uint64(gid), sg) || busy
	}
	if s.groups[MetaGroup].leader != 0 { // Plan runs on the metadata leader
		v := s.view()
		steps, err := Plan(v)
		s.err = err
		s.checkSteps(v, steps)
		for _, st := range steps {
			s.log = append(s.log, st.String())
			s.apply(st)
			busy = true
			if st.Kind != StepTransferLeader {
				s.replica = true
			}
		}
		if l := s.partitionLearners(); l > max(s.maxMoves, s.partitionLearnersIn(v.Map)) {
			s.fail("%d learners being added, MaxMoves %d", l, s.maxMoves)
		}
	}
	for gid, sg := range s.groups {
		for _, id := range sortedKeys(sg.voters) {
			busy = s.catchUp(sg, uint64(gid), id) || busy
		}
		for _, id := range sortedKeys(sg.learners) {
			busy = s.catchUp(sg, uint64(gid), id) || busy
		}
		if sg.leader != 0 && s.chance() {
			busy = s.reconcile(uint64(gid), sg) || busy
		}
		busy = s.elect(uint64(gid), sg) || busy
	}
	return busy
}

func (s *sim) catchUp(sg *simGroup, g, id uint64) bool {
	if sg.caught[id] || sg.leader == 0 || !s.up(s.nodeOf(g, id)) || !s.chance() {
		return false
	}
	sg.caught[id] = true
	return true
}

func (s *sim) partitionLearnersIn(m *Map) int {
	n := 0
	for _, g := range m.Groups[1:] {
		for _, r := range g.Replicas {
			if r.Role == RoleLearner {
				n++
			}
		}
	}
	return n
}

func (s *sim) partitionLearners() int { return s.partitionLearnersIn(s.m) }

// checkSteps asserts what every plan must respect.
func (s *sim) checkSteps(v View, steps []Step) {
	s.t.Helper()
	seen := map[uint64]bool{}
	for _, st := range steps {
		if seen[st.Group] {
			s.fail("two steps for group %d in one plan: %v", st.Group, steps)
		}
		seen[st.Group] = true
		gv := v.Applied[st.Group]
		g := &s.m.Groups[st.Group]
		switch st.Kind {
		case StepAddReplica:
			if _, ok := s.m.ReplicaOn(st.Group, st.Node); ok || !s.up(st.Node) {
				s.fail("add on %s, which holds group %d or is down: %v", st.Node, st.Group, st)
			}
		case StepPromote:
			if !slices.Contains(gv.CaughtUp, st.Replica) {
				s.fail("promoting a replica that has not caught up: %v", st)
			}
		case StepRemoveReplica, StepDemote:
			if st.Replica == gv.Leader {
				s.fail("dropping the leader: %v", st)
			}
		case StepTransferLeader:
			if !slices.Contains(gv.Voters, st.Replica) || !slices.Contains(gv.CaughtUp, st.Replica) {
				s.fail("leadership to a replica that is not a caught-up voter: %v", st)
			}
		}
		if _, ok := replicaNode(g, st.Replica); st.Kind != StepAddReplica && !ok {
			s.fail("step on a replica the map does not have: %v", st)
		}
	}
}

func (s *sim) apply(st Step) {
	s.t.Helper()
	if st.Kind == StepTransferLeader {
		s.groups[st.Group].leader = st.Replica
		return
	}
	if r := apply(s.m, st.Command()); r.Error != "" {
		s.fail("step %v refused: %s", st, r.Error)
	}
}

// reconcile makes one membership change so that the group follows the map.
func (s *sim) reconcile(g uint64, sg *simGroup) bool {
	s.t.Helper()
	grp := &s.m.Groups[g]
	change := func(what string, f func()) bool {
		f()
		if live := s.liveVoters(g, sg); live < len(sg.voters)/2+1 {
			s.fail("group %d lost its majority after %s: %d of %d voters alive", g, what, live, len(sg.voters))
		}
		return true
	}
	for _, r := range grp.Replicas {
		if !sg.voters[r.ID] && !sg.learners[r.ID] {
			return change("adding a learner", func() { sg.learners[r.ID] = true })
		}
	}
	for _, r := range grp.Replicas {
		if r.Role == RoleVoter && sg.learners[r.ID] && sg.caught[r.ID] && s.up(r.Node) {
			return change("a promotion", func() { delete(sg.learners, r.ID); sg.voters[r.ID] = true })
		}
		if r.Role == RoleLearner && sg.voters[r.ID] {
			return change("a demotion", func() { delete(sg.voters, r.ID); sg.learners[r.ID] = true })
		}
	}
	for _, id := range append(sortedKeys(sg.voters), sortedKeys(sg.learners)...) {
		if _, ok := replicaNode(grp, id); !ok && id != sg.leader {
			return change("a removal", func() { delete(sg.voters, id); delete(sg.learners, id); delete(sg.caught, id) })
		}
	}
	return false
}

func (s *sim) liveVoters(g uint64, sg *simGroup) int {
	n := 0
	for id := range sg.voters {
		if s.up(s.nodeOf(g, id)) {
			n++
		}
	}
	return n
}

// elect gives a group with a live majority a live leader, and takes the
// leader away from one without.
func (s *sim) elect(g uint64, sg *simGroup) bool {
	if sg.leader != 0 && sg.voters[sg.leader] && s.up(s.nodeOf(g, sg.leader)) && s.liveVoters(g, sg) >= len(sg.voters)/2+1 {
		return false
	}
	old := sg.leader
	sg.leader = 0
	if s.liveVoters(g, sg) >= len(sg.voters)/2+1 {
		var live []uint64
		for _, id := range sortedKeys(sg.voters) {
			if s.up(s.nodeOf(g, id)) {
				live = append(live, id)
			}
		}
		sg.leader = live[0]
		if s.rng != nil {
			sg.leader = live[s.rng.IntN(len(live))]
		}
	}
	return sg.leader != old
}

// settle runs rounds until nothing happens (for 30 rounds in a row when
// progress is random).
func (s *sim) settle() {
	s.t.Helper()
	idle := 0
	for range 5000 {
		if s.round() {
			idle = 0
		} else if idle++; s.rng == nil || idle >= 30 {
			return
		}
	}
	s.fail("no fixed point after 5000 rounds")
}

// --- expectations, computed independently of the controller -------------

type shape struct {
	regular, standby []string // usable nodes: active, not dead beyond DeadAfter
	zones            map[string]string
}

func (s *sim) shape() shape {
	sh := shape{zones: map[string]string{}}
	for _, n := range s.m.Nodes {
		sh.zones[n.ID] = n.Zone
		if n.State != NodeActive || s.health[n.ID].State == HealthDead {
			continue
		}
		if n.Standby {
			sh.standby = append(sh.standby, n.ID)
		} else {
			sh.regular = append(sh.regular, n.ID)
		}
	}
	return sh
}

func (sh shape) pool(want int) []string {
	if len(sh.regular) >= want {
		return sh.regular
	}
	return append(slices.Clone(sh.regular), sh.standby...)
}

// zoneCap is the most replicas of a group one zone should hold: the target
// shared evenly across the pool's zones (ceil(target/zones)), more where some
// zones have too few nodes.
func (sh shape) zoneCap(pool []string, target int) int {
	size := map[string]int{}
	for _, n := range pool {
		size[sh.zones[n]]++
	}
	for level := 0; ; level++ {
		sum := 0
		for _, c := range size {
			sum += min(c, level)
		}
		if sum >= target || level > target {
			return level
		}
	}
}

// zonesEven reports whether every zone of the pool has as many nodes.
func (sh shape) zonesEven(pool []string) bool {
	size := map[string]int{}
	for _, n := range pool {
		size[sh.zones[n]]++
	}
	for _, c := range size {
		if c != size[sh.zones[pool[0]]] {
			return false
		}
	}
	return true
}

// checkLayout asserts the fixed point is the target layout.
func (s *sim) checkLayout() {
	s.t.Helper()
	if s.groups[MetaGroup].leader == 0 {
		return // the metadata group lost its majority: no controller runs
	}
	sh := s.shape()
	rf := s.m.ReplicationFactor
	pool := sh.pool(rf)
	inPool := map[string]bool{}
	for _, n := range pool {
		inPool[n] = true
	}
	target := min(rf, len(pool))
	zcap := sh.zoneCap(pool, target)
	replicas, leaders := map[string]int{}, map[string]int{}
	stranded := map[string][]uint64{}
	lost := false
	for _, g := range s.m.Groups[1:] {
		sg := s.groups[g.ID]
		for _, r := range g.Replicas {
			replicas[r.Node]++
		}
		if sg.leader == 0 {
			lost = true // lost its majority: nothing can be done
			continue
		}
		leaders[s.nodeOf(g.ID, sg.leader)]++
		good, nodes, zones := 0, map[string]bool{}, map[string]int{}
		for _, r := range g.Replicas {
			if nodes[r.Node] {
				s.fail("group %d has two replicas on %s", g.ID, r.Node)
			}
			nodes[r.Node] = true
			if r.Role != RoleVoter || !sg.voters[r.ID] {
				s.fail("group %d: replica %d on %s is not a settled voter", g.ID, r.ID, r.Node)
			}
			if inPool[r.Node] {
				good++
				zones[sh.zones[r.Node]]++
			} else if s.nodeDraining(r.Node) {
				stranded[r.Node] = append(stranded[r.Node], g.ID)
			}
		}
		if good != target {
			s.fail("group %d has %d replicas on eligible nodes, want %d: %+v", g.ID, good, target, g.Replicas)
		}
		if len(pool) >= rf && len(g.Replicas) != good {
			s.fail("group %d keeps replicas off the eligible nodes: %+v", g.ID, g.Replicas)
		}
		if len(g.Replicas) > rf || len(sg.voters)+len(sg.learners) != len(g.Replicas) {
			s.fail("group %d: map %+v, applied %v %v", g.ID, g.Replicas, sg.voters, sg.learners)
		}
		for z, c := range zones {
			if c > zcap {
				s.fail("group %d has %d replicas in zone %q, at most %d wanted: %+v", g.ID, c, z, zcap, g.Replicas)
			}
		}
	}
	s.checkMeta(sh)
	s.checkDrained(stranded)
	if !lost { // else the lost groups' replicas dictate the counts
		s.checkEven("replicas", pool, sh, replicas)
		s.checkEven("leaders", pool, sh, leaders)
	}
}

func (s *sim) nodeDraining(id string) bool {
	n, _ := s.m.Node(id)
	return n != nil && n.State == NodeDraining
}

func (s *sim) checkMeta(sh shape) {
	s.t.Helper()
	pool := sh.pool(s.m.MetaVoters)
	want := max(1, min(s.m.MetaVoters, len(pool)))
	zcap := sh.zoneCap(pool, want)
	voters, zones := 0, map[string]int{}
	for _, r := range s.m.Groups[MetaGroup].Replicas {
		if r.Role != RoleVoter {
			continue
		}
		if !slices.Contains(pool, r.Node) && len(pool) > 0 {
			s.fail("metadata voter on %s, outside %v", r.Node, pool)
		}
		voters++
		zones[sh.zones[r.Node]]++
	}
	if voters != want {
		s.fail("%d metadata voters, want %d: %+v", voters, want, s.m.Groups[MetaGroup].Replicas)
	}
	for z, c := range zones {
		if c > zcap {
			s.fail("%d metadata voters in zone %q, at most %d wanted", c, z, zcap)
		}
	}
	for _, n := range s.m.Nodes {
		if _, ok := s.m.ReplicaOn(MetaGroup, n.ID); !ok && s.up(n.ID) {
			s.fail("node %s has no metadata replica", n.ID)
		}
	}
}

// checkDrained asserts that a draining node keeps only the replicas Plan
// reports it cannot move, and that Plan reports only replicas it keeps.
func (s *sim) checkDrained(stranded map[string][]uint64) {
	s.t.Helper()
	reported := drainGroups(s.err)
	if s.err != nil && !errors.Is(s.err, ErrDrainImpossible) {
		s.fail("Plan: %v", s.err)
	}
	for node, gs := range stranded {
		for _, g := range gs {
			if !slices.Contains(reported[node], g) {
				s.fail("draining %s keeps group %d, but Plan reports %v", node, g, s.err)
			}
		}
	}
	for node, gs := range reported {
		for _, g := range gs {
			if _, ok := s.m.ReplicaOn(g, node); !ok {
				s.fail("Plan reports group %d stuck on %s, which holds none", g, node)
			}
		}
	}
}

// drainGroups returns the groups each DrainError in err names, by node.
func drainGroups(err error) map[string][]uint64 {
	out := map[string][]uint64{}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var de *DrainError
		if errors.As(e, &de) {
			out[de.Node] = append(out[de.Node], de.Groups...)
		}
	}
	return out
}

// checkEven asserts counts within one among the pool's regular nodes (and
// among its standby nodes): inside each zone always, across zones when zones
// allow it (no zones, or as many nodes in each, and no standby in the pool).
func (s *sim) checkEven(what string, pool []string, sh shape, counts map[string]int) {
	s.t.Helper()
	spread := func(c []int) int { return slices.Max(c) - slices.Min(c) }
	for _, standby := range []bool{false, true} {
		var class []string
		for _, n := range pool {
			if s.nodeIsStandby(n) == standby {
				class = append(class, n)
			}
		}
		if len(class) == 0 {
			continue
		}
		byZone := map[string][]int{}
		var all []int
		for _, n := range class {
			byZone[sh.zones[n]] = append(byZone[sh.zones[n]], counts[n])
			all = append(all, counts[n])
		}
		for z, c := range byZone {
			if spread(c) > 1 {
				s.fail("%s uneven in zone %q: %v", what, z, counts)
			}
		}
		if len(class) == len(pool) && sh.zonesEven(class) && spread(all) > 1 {
			s.fail("%s uneven across %v: %v", what, class, counts)
		}
	}
}

func (s *sim) nodeIsStandby(id string) bool {
	n, _ := s.m.Node(id)
	return n != nil && n.Standby
}

// --- tests ----------------------------------------------------------------

func testNodes(n, zones int, standby bool) []Node {
	var out []Node
	zone := func(i int) string {
		if zones == 0 {
			return ""
		}
		return fmt.Sprintf("z%d", i%zones)
	}
	for i := range n {
		out = append(out, Node{ID: fmt.Sprintf("n%d", i+1), Incarnation: "i", Addr: "a", Zone: zone(i)})
	}
	if standby {
		out = append(out, Node{ID: "s1", Incarnation: "i", Addr: "a", Zone: zone(n), Standby: true})
	}
	return out
}

func grow(t testing.TB, partitions, rf, maxMoves int, nodes []Node) *sim {
	t.Helper()
	s := newSim(t, partitions, rf, 3, maxMoves, nodes[0])
	for _, n := range nodes[1:] {
		s.addNode(n)
	}
	s.settle()
	return s
}

// TestPlan_Shapes grows a cluster from its first node, then kills or drains
// one node, and checks the layout at each fixed point.
func TestPlan_Shapes(t *testing.T) {
	for nodes := 1; nodes <= 7; nodes++ {
		for rf := 1; rf <= 5; rf++ {
			for _, zones := range []int{0, 2, 3} {
				for _, standby := range []bool{false, true} {
					for _, event := range []string{"healthy", "dead", "draining"} {
						name := fmt.Sprintf("nodes=%d/rf=%d/zones=%d/standby=%v/%s", nodes, rf, zones, standby, event)
						t.Run(name, func(t *testing.T) {
							t.Parallel()
							testShape(t, nodes, rf, zones, standby, event)
						})
					}
				}
			}
		}
	}
}

func testShape(t *testing.T, nodes, rf, zones int, standby bool, event string) {
	ns := testNodes(nodes, zones, standby)
	s := grow(t, 12, rf, 3, ns)
	s.checkLayout()
	victim := ns[nodes-1].ID
	switch event {
	case "dead":
		// Dead, but not for DeadAfter yet: a restart is not a departure.
		s.health[victim] = NodeHealth{State: HealthDead, DeadFor: simDeadAfter / 2}
		s.replica = false
		s.settle()
		if s.replica {
			t.Fatalf("replicas moved while %s was dead for less than DeadAfter:\n%s", victim, strings.Join(s.log, "\n"))
		}
		s.health[victim] = NodeHealth{State: HealthDead, DeadFor: simDeadAfter}
	case "draining":
		refused := CheckDrain(s.m, victim)
		if n, _ := s.m.Node(victim); n != nil {
			n.State = NodeDraining
		}
		s.settle()
		holds := false
		for _, g := range s.m.Groups[1:] {
			if _, ok := s.m.ReplicaOn(g.ID, victim); ok {
				holds = true
			}
		}
		if (refused == nil) == holds {
			t.Fatalf("CheckDrain said %v, but after the drain %s holds replicas: %v", refused, victim, holds)
		}
		if refused != nil && !errors.Is(refused, ErrDrainImpossible) {
			t.Fatalf("CheckDrain: %v", refused)
		}
	}
	s.settle()
	s.checkLayout()
}

// TestPlan_Random drives random shapes through random events with delayed
// and reordered progress, checking the majority invariant at every change
// and the layout at every fixed point.
func TestPlan_Random(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			testRandom(t, uint64(seed))
		})
	}
}

func testRandom(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	zones := rng.IntN(4)
	mkNode := func(i int, standby bool) Node {
		n := Node{ID: fmt.Sprintf("n%02d", i), Incarnation: "i", Addr: "a", Standby: standby}
		if zones > 0 {
			n.Zone = fmt.Sprintf("z%d", rng.IntN(zones))
		}
		return n
	}
	metaVoters := []int{1, 3, 5}[rng.IntN(3)]
	s := newSim(t, 1+rng.IntN(20), 1+rng.IntN(5), metaVoters, 1+rng.IntN(4), mkNode(0, false))
	s.rng = rng
	next := 1
	for range rng.IntN(7) {
		s.addNode(mkNode(next, rng.IntN(5) == 0))
		next++
	}
	s.settle()
	s.checkLayout()
	for range 6 {
		nodes := s.m.Nodes
		n := nodes[rng.IntN(len(nodes))].ID
		switch rng.IntN(5) {
		case 0:
			s.addNode(mkNode(next, rng.IntN(4) == 0))
			next++
		case 1: // dies for good
			s.health[n] = NodeHealth{State: HealthDead, DeadFor: simDeadAfter}
		case 2: // comes back
			delete(s.health, n)
		case 3: // drains, if the drain is allowed
			if CheckDrain(s.m, n) != nil {
				continue
			}
			fallthrough
		case 4: // drains regardless
			nd, _ := s.m.Node(n)
			nd.State = NodeDraining
		}
		s.settle()
		if s.groups[MetaGroup].leader == 0 {
			return // the metadata group lost its majority: no controller
		}
		s.checkLayout()
	}
}

func TestPlan_SlowLearnerStaysLearner(t *testing.T) {
	s := grow(t, 4, 3, 2, testNodes(3, 0, false))
	s.addNode(Node{ID: "n4", Incarnation: "i", Addr: "a"})
	// n4 is down right after joining: nothing may be placed there.
	s.health["n4"] = NodeHealth{State: HealthSuspect}
	for range 20 {
		s.round()
	}
	for _, g := range s.m.Groups {
		if r, ok := s.m.ReplicaOn(g.ID, "n4"); ok && r.Role == RoleVoter {
			t.Fatalf("group %d promoted a replica on a suspect node", g.ID)
		}
	}
	delete(s.health, "n4")
	s.settle()
	s.checkLayout()
}

func TestPlan_OneChangePerGroup(t *testing.T) {
	s := grow(t, 2, 3, 4, testNodes(3, 0, false))
	s.addNode(Node{ID: "n4", Incarnation: "i", Addr: "a"})
	v := s.view()
	steps, _ := Plan(v)
	if len(steps) == 0 {
		t.Fatal("nothing planned for a new node")
	}
	g := steps[0].Group
	gv := v.Applied[g]
	gv.Pending = true
	v.Applied[g] = gv
	steps, _ = Plan(v)
	for _, st := range steps {
		if st.Group == g {
			t.Fatalf("planned %v for a group with a change pending", st)
		}
	}
}

// TestPlan_ReplaceDead follows one partition through its replacement: the
// new replica is added as a learner, promoted once caught up, and only then
// is the dead one removed.
func TestPlan_ReplaceDead(t *testing.T) {
	s := grow(t, 1, 3, 1, testNodes(4, 0, false))
	var dead string
	for _, r := range s.m.Groups[1].Replicas {
		if r.ID != s.groups[1].leader {
			dead = r.Node
		}
	}
	s.health[dead] = NodeHealth{State: HealthDead, DeadFor: 2 * simDeadAfter}
	s.log = nil
	s.settle()
	var kinds []StepKind
	for _, l := range s.log {
		if strings.Contains(l, " group 1 ") && !strings.HasPrefix(l, string(StepTransferLeader)) {
			kinds = append(kinds, StepKind(strings.Fields(l)[0]))
		}
	}
	if want := []StepKind{StepAddReplica, StepPromote, StepRemoveReplica}; !slices.Equal(kinds, want) {
		t.Fatalf("steps %v, want %v:\n%s", kinds, want, strings.Join(s.log, "\n"))
	}
	s.checkLayout()
}

func TestPlan_Deterministic(t *testing.T) {
	s := grow(t, 16, 3, 2, testNodes(5, 2, true))
	s.health["n2"] = NodeHealth{State: HealthDead, DeadFor: simDeadAfter}
	nd, _ := s.m.Node("n3")
	nd.State = NodeDraining
	v := s.view()
	want, wantErr := Plan(v)
	if len(want) == 0 {
		t.Fatal("no steps to compare")
	}
	for range 20 {
		got, err := Plan(s.view())
		if !slices.Equal(got, want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("Plan changed its mind:\n%v\n%v", got, want)
		}
	}
}

func TestPlan_Empty(t *testing.T) {
	if steps, err := Plan(View{}); steps != nil || err != nil {
		t.Fatalf("Plan of nothing: %v %v", steps, err)
	}
}

func TestCheckDrain(t *testing.T) {
	cases := []struct {
		nodes, rf int
		standby   bool
		ok        bool
	}{
		{1, 1, false, false},
		{2, 1, false, true},
		{2, 2, false, false},
		{3, 3, false, false},
		{3, 3, true, true},
		{4, 3, false, true},
		{5, 5, false, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("nodes=%d/rf=%d/standby=%v", c.nodes, c.rf, c.standby), func(t *testing.T) {
			s := grow(t, 6, c.rf, 3, testNodes(c.nodes, 0, c.standby))
			err := CheckDrain(s.m, fmt.Sprintf("n%d", c.nodes))
			if (err == nil) != c.ok {
				t.Fatalf("CheckDrain: %v, want ok %v", err, c.ok)
			}
			if err != nil && (!errors.Is(err, ErrDrainImpossible) || !slices.Contains(drainGroups(err)[fmt.Sprintf("n%d", c.nodes)], 1)) {
				t.Fatalf("CheckDrain error %q does not name the group", err)
			}
		})
	}
	if err := CheckDrain(&Map{}, "nope"); err == nil || errors.Is(err, ErrDrainImpossible) {
		t.Fatalf("unknown node: %v", err)
	}
}

func TestStep_Command(t *testing.T) {
	cases := []struct {
		step Step
		want *Command
	}{
		{Step{Kind: StepAddReplica, Group: 2, Node: "n3"}, &Command{Op: OpAddReplica, Group: 2, NodeID: "n3", Role: RoleLearner}},
		{Step{Kind: StepPromote, Group: 2, Replica: 9}, &Command{Op: OpSetRole, Group: 2, Replica: 9, Role: RoleVoter}},
		{Step{Kind: StepDemote, Group: 0, Replica: 9}, &Command{Op: OpSetRole, Replica: 9, Role: RoleLearner}},
		{Step{Kind: StepRemoveReplica, Group: 2, Replica: 9}, &Command{Op: OpRemoveReplica, Group: 2, Replica: 9}},
		{Step{Kind: StepTransferLeader, Group: 2, Replica: 9}, nil},
	}
	for _, c := range cases {
		got := c.step.Command()
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%v: got %+v, want %+v", c.step, got, c.want)
		}
	}
}

func BenchmarkPlan(b *testing.B) {
	for _, event := range []string{"settled", "dead"} {
		b.Run(event, func(b *testing.B) {
			s := grow(b, 64, 3, 4, testNodes(7, 3, false))
			if event == "dead" {
				s.health["n7"] = NodeHealth{State: HealthDead, DeadFor: simDeadAfter}
			}
			v := s.view()
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Plan(v)
			}
		})
	}
}

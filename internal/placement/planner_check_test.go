package placement

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// Expectations, computed independently of the planner.

// shape is a cluster shape the checks derive targets from.
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

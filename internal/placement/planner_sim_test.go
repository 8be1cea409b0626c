package placement

import (
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
	mustOK(t, applyMap(s.m, CreateCluster{ClusterID: "c", Partitions: partitions, ReplicationFactor: rf, MetaVoters: metaVoters, Node: first}, 0))
	for _, g := range s.m.Groups {
		id := g.Replicas[0].ID
		s.groups = append(s.groups, &simGroup{voters: map[uint64]bool{id: true}, learners: map[uint64]bool{}, leader: id, caught: map[uint64]bool{id: true}})
	}
	return s
}

func mustOK(t testing.TB, r Result) {
	t.Helper()
	if r.Code != CodeOK {
		t.Fatal(r.Error)
	}
}

func (s *sim) addNode(n Node) {
	s.t.Helper()
	mustOK(s.t, applyMap(s.m, AddNode{Node: n}, 0))
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
	seen := map[uint64][]StepKind{}
	for _, st := range steps {
		gv := v.Applied[st.Group]
		g := &s.m.Groups[st.Group]
		// One step per group, but for the two replicas a partition on one
		// voter gets together (on distinct nodes: the check below), and
		// their promotion together, so that they become voters at once.
		if prev := seen[st.Group]; len(prev) > 0 {
			pair := len(prev) == 1 && prev[0] == st.Kind && (st.Kind == StepAddReplica || st.Kind == StepPromote) &&
				st.Group != MetaGroup && s.m.voters(st.Group) == 1
			if !pair {
				s.fail("two steps for group %d in one plan: %v", st.Group, steps)
			}
		}
		seen[st.Group] = append(seen[st.Group], st.Kind)
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
	if r := applyMap(s.m, st.Command(0), 0); r.Code != CodeOK {
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

package placement

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

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

// A dead node's replicas are rebuilt on a node with room, never on one
// whose disk is full (it could not store them).
func TestPlan_NoReplicaOnAFullDisk(t *testing.T) {
	s := grow(t, 4, 3, 1, testNodes(5, 0, false))
	s.health["n1"] = NodeHealth{State: HealthDead, DeadFor: 2 * simDeadAfter}
	s.health["n5"] = NodeHealth{DiskFull: true}
	steps, _ := Plan(s.view())
	adds := 0
	for _, st := range steps {
		if st.Kind == StepAddReplica {
			adds++
			if st.Node == "n5" {
				t.Fatalf("a replica of group %d planned on n5, whose disk is full: %+v", st.Group, st)
			}
		}
	}
	if adds == 0 {
		t.Fatalf("no replica planned to replace the dead node's: the test proves nothing (%v)", steps)
	}
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
		want Command
	}{
		{Step{Kind: StepAddReplica, Group: 2, Node: "n3"}, AddReplica{Term: 7, Group: 2, NodeID: "n3", Role: RoleLearner}},
		{Step{Kind: StepPromote, Group: 2, Replica: 9}, SetRole{Term: 7, Group: 2, Replica: 9, Role: RoleVoter}},
		{Step{Kind: StepDemote, Group: 0, Replica: 9}, SetRole{Term: 7, Replica: 9, Role: RoleLearner}},
		{Step{Kind: StepRemoveReplica, Group: 2, Replica: 9}, RemoveReplica{Term: 7, Group: 2, Replica: 9}},
		{Step{Kind: StepTransferLeader, Group: 2, Replica: 9}, nil},
	}
	for _, c := range cases {
		if got := c.step.Command(7); !reflect.DeepEqual(got, c.want) {
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

// A node that lost its leaderships (it died and the groups it led elected
// others) while gossip still sees it alive must not be handed leaderships
// back: balancing skips a silent node, and takes it up again once it is
// heard. Nor one that is shutting down (it gossips so).
func TestPlan_NoLeadershipToSilentNode(t *testing.T) {
	s := grow(t, 12, 3, 12, testNodes(3, 0, false))
	for gid, sg := range s.groups[1:] { // n3's leaderships moved elsewhere
		g := uint64(gid + 1)
		if s.nodeOf(g, sg.leader) == "n3" {
			for id := range sg.voters {
				if s.nodeOf(g, id) != "n3" {
					sg.leader = id
					break
				}
			}
		}
	}
	transfersTo := func(v View) int {
		steps, _ := Plan(v)
		n := 0
		for _, st := range steps {
			if st.Kind == StepTransferLeader && st.Node == "n3" {
				n++
			}
		}
		return n
	}
	v := s.view()
	v.Health["n3"] = NodeHealth{Silent: true}
	if n := transfersTo(v); n != 0 {
		t.Fatalf("%d leaderships moved to the silent node", n)
	}
	// A node shutting down hands its leaderships over: none comes back.
	v.Health["n3"] = NodeHealth{Leaving: true}
	if n := transfersTo(v); n != 0 {
		t.Fatalf("%d leaderships moved to the node that is leaving", n)
	}
	v.Health["n3"] = NodeHealth{}
	if transfersTo(v) == 0 {
		t.Fatal("the node heard again gets no leadership back: the test proves nothing")
	}
	// A group whose leader is unknown (an election after a death) leaves
	// the counts incomplete: no balancing at all.
	gv := v.Applied[1]
	gv.Leader = 0
	v.Applied[1] = gv
	if n := transfersTo(v); n != 0 {
		t.Fatalf("%d leaderships moved while a group's leader was unknown", n)
	}
}

// A partition on one voter in a cluster of three nodes gets both missing
// replicas in one plan, and once both caught up, both promotions in one
// plan, so that its leader promotes them in one joint change: the group
// never runs on two voters, which a single death would stop.
func TestPlan_OneVoterGetsBothReplicasAtOnce(t *testing.T) {
	nodes := testNodes(3, 0, false)
	s := newSim(t, 2, 3, 3, 4, nodes[0])
	for _, n := range nodes[1:] {
		s.addNode(n)
	}
	steps, _ := Plan(s.view())
	adds := map[uint64][]string{}
	for _, st := range steps {
		if st.Kind == StepAddReplica && st.Group != MetaGroup {
			adds[st.Group] = append(adds[st.Group], st.Node)
		}
	}
	for g := uint64(1); g <= 2; g++ {
		if len(adds[g]) != 2 || adds[g][0] == adds[g][1] {
			t.Errorf("group %d: the first plan adds replicas on %v, want two distinct nodes (steps %v)", g, adds[g], steps)
		}
	}
	// Both learners caught up: the next plan promotes both.
	for _, st := range steps {
		s.apply(st)
	}
	for g := uint64(1); g <= 2; g++ {
		for _, r := range s.m.Groups[g].Replicas {
			if sg := s.groups[g]; !sg.voters[r.ID] {
				sg.learners[r.ID], sg.caught[r.ID] = true, true
			}
		}
	}
	steps, _ = Plan(s.view())
	promotes := map[uint64]int{}
	for _, st := range steps {
		if st.Kind == StepPromote {
			promotes[st.Group]++
		}
	}
	for g := uint64(1); g <= 2; g++ {
		if promotes[g] != 2 {
			t.Errorf("group %d: %d promotions in the plan after both learners caught up, want 2 (steps %v)", g, promotes[g], steps)
		}
	}
	s.settle()
	s.checkLayout()
}

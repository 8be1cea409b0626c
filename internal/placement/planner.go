package placement

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// The planner decides, for the placement controller on the metadata leader
// (node/controller.go), how the cluster map moves towards its target layout.
// Plan is a pure function of a View (the map, what gossip says about each
// node and what each group has applied), so tests drive it step by step. Its
// rules, in priority order:
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
	// Silent is set when none of the node's Raft traffic was heard lately:
	// it may have died before gossip noticed. It is given no leadership.
	Silent bool
	// DiskFull is set while the node's disk is below its reserve (it
	// gossips so): it refuses writes and hands its leaderships over, so it
	// is given none.
	DiskFull bool
	// DiskSlow is set while the node's synced commits are slow (it gossips
	// so): it hands its leaderships over, so it is given none.
	DiskSlow bool
	// Leaving is set while the node shuts down (it gossips so): it hands
	// its leaderships over, so it is given none.
	Leaving bool
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

// Step is one decision of the planner.
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

// Command returns the metadata command that carries out s, fenced by the
// metadata leader's term, or nil for TransferLeader, which is not a map
// change: the wiring asks the group's leader to hand over.
func (s Step) Command(term uint64) Command {
	switch s.Kind {
	case StepAddReplica:
		return AddReplica{Term: term, Group: s.Group, NodeID: s.Node, Role: RoleLearner}
	case StepPromote:
		return SetRole{Term: term, Group: s.Group, Replica: s.Replica, Role: RoleVoter}
	case StepDemote:
		return SetRole{Term: term, Group: s.Group, Replica: s.Replica, Role: RoleLearner}
	case StepRemoveReplica:
		return RemoveReplica{Term: term, Group: s.Group, Replica: s.Replica}
	}
	return nil
}

func (s Step) String() string {
	return fmt.Sprintf("%s group %d node %s replica %d (%s)", s.Kind, s.Group, s.Node, s.Replica, s.Reason)
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
	leadersKnown := true // every partition's leader is in the view
	for _, st := range p.states[1:] {
		leadersKnown = leadersKnown && p.applied[st.g.ID].Leader != 0
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
		for range p.addsFor(st) {
			if p.moves >= p.maxMoves {
				break
			}
			n := p.pickAdd(st, st.zoneFix)
			if n == "" {
				break
			}
			reason := "under-replicated"
			if st.zoneFix {
				reason = "zone spread"
			}
			p.add(Step{Kind: StepAddReplica, Group: st.g.ID, Node: n, Reason: reason})
			p.counts[n]++
			p.moves++
			st.adding = append(st.adding, n)
			st.zoneGood[p.node(n).zone]++
		}
	}
	p.balanceReplicas(settled)
	// Leaders are counted only where they are known: while a group's leader
	// is unknown (its node just died, an election is on) a node can look
	// as if it led nothing, and balancing would hand it leaderships.
	if !p.changed && leadersKnown {
		p.balanceLeaders(settled)
	}
	return p.steps, p.drainErr()
}

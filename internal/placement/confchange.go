package placement

import "slices"

// The rules below are how a group's leader makes the group's Raft
// configuration (its voters and learners) follow the map, one change at a
// time; node/reconcile.go applies them. They judge the applied
// configuration as the leader reports it, a GroupView whose Leader is the
// leader's own replica.

// ConfChangeKind names one change of a group's Raft configuration.
type ConfChangeKind string

// Configuration changes. AddLearner adds a replica as a learner; Promote
// makes a learner a voter; Demote makes a voter a learner; Remove takes a
// replica out of the configuration.
const (
	ConfAddLearner ConfChangeKind = "add_learner"
	ConfPromote    ConfChangeKind = "promote"
	ConfDemote     ConfChangeKind = "demote"
	ConfRemove     ConfChangeKind = "remove"
)

// ConfChange is one change of a group's Raft configuration.
type ConfChange struct {
	Kind    ConfChangeKind
	Replica uint64
	// Also are further learners a ConfPromote promotes in the same change:
	// one joint configuration (Raft thesis §4.3) takes a group from one
	// voter to three without passing through two, which a single death
	// would stop.
	Also []uint64
}

// NextConfChange returns the next change that makes a group's Raft
// configuration follow the map: add missing replicas as learners, promote
// learners the map wants as voters once they have caught up (every one
// caught up at once, in one joint change), demote voters
// the map lists as learners, remove replicas the map no longer lists (never
// the leader itself: the controller hands leadership over first). It is
// judged against the applied configuration; Raft would turn a second
// pending change into a no-op, so nothing is proposed while a joint
// configuration is being left (Pending), and the next round re-reads the
// applied configuration.
func NextConfChange(v GroupView, g *Group) (ConfChange, bool) {
	if v.Pending {
		return ConfChange{}, false
	}
	voter := func(id uint64) bool { return slices.Contains(v.Voters, id) }
	learner := func(id uint64) bool { return slices.Contains(v.Learners, id) }
	for _, r := range g.Replicas {
		if !voter(r.ID) && !learner(r.ID) {
			return ConfChange{Kind: ConfAddLearner, Replica: r.ID}, true
		}
	}
	var promote []uint64
	for _, r := range g.Replicas {
		if r.Role == RoleVoter && learner(r.ID) && slices.Contains(v.CaughtUp, r.ID) {
			promote = append(promote, r.ID)
		}
	}
	if len(promote) > 0 {
		return ConfChange{Kind: ConfPromote, Replica: promote[0], Also: promote[1:]}, true
	}
	for _, r := range g.Replicas {
		if r.Role == RoleLearner && voter(r.ID) && r.ID != v.Leader {
			return ConfChange{Kind: ConfDemote, Replica: r.ID}, true
		}
	}
	for _, id := range slices.Concat(v.Voters, v.Learners) {
		if _, ok := replicaNode(g, id); !ok && id != v.Leader {
			return ConfChange{Kind: ConfRemove, Replica: id}, true
		}
	}
	return ConfChange{}, false
}

// LonePromotionWaits reports whether cc, the promotion of one learner,
// had better wait for another learner of the group: one the map also wants
// as a voter that is still catching up, or, in a partition, one the map
// still lists as a learner (the planner promotes a partition's two new
// replicas in one plan, and the map may show the first before the second).
// Promoted alone, it would take the group from one voter to two, which stop
// if either dies; promoted together (Also), the two take it to three. The
// caller bounds the wait: a learner that never catches up (its node died)
// must not keep the group on one voter.
func LonePromotionWaits(v GroupView, g *Group, cc ConfChange) bool {
	if cc.Kind != ConfPromote || len(cc.Also) > 0 || len(v.Voters) != 1 {
		return false
	}
	for _, r := range g.Replicas {
		if r.ID == cc.Replica || !slices.Contains(v.Learners, r.ID) {
			continue
		}
		if r.Role == RoleVoter && !slices.Contains(v.CaughtUp, r.ID) || r.Role == RoleLearner && g.ID != MetaGroup {
			return true
		}
	}
	return false
}

// LeaderHandOff returns the replica a group's leader should hand leadership
// to when the map no longer lists the leader's own replica as a voter: a
// retired replica that is still reachable may win an election before its
// removal applies, and a leader never removes itself, so without a
// hand-over the group would keep it for good. It picks the caught-up voter
// of the map that is a voter in Raft too, in the map's order (lowest id
// first).
func LeaderHandOff(v GroupView, g *Group) (uint64, bool) {
	for _, r := range g.Replicas {
		if r.ID == v.Leader && r.Role == RoleVoter {
			return 0, false
		}
	}
	for _, r := range g.Replicas {
		if r.Role == RoleVoter && slices.Contains(v.Voters, r.ID) && slices.Contains(v.CaughtUp, r.ID) {
			return r.ID, true
		}
	}
	return 0, false
}

// CatchUpSlack is how many entries a replica may trail the leader's commit
// index and still count as caught up: under steady writes a healthy
// follower is always a few entries behind.
const CatchUpSlack = 64

// Progress is what a group's leader knows of another replica's log.
type Progress struct {
	// Match is the highest log index known to be on the replica.
	Match uint64
	// Active is set when the replica answered the leader lately.
	Active bool
}

// CaughtUp reports whether a replica whose progress is p has (nearly)
// everything the leader committed (commit) and answers it.
func CaughtUp(p Progress, commit uint64) bool {
	return p.Active && p.Match > 0 && p.Match+CatchUpSlack >= commit
}

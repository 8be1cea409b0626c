package placement

import "slices"

// NextChange returns the next change that brings the map closer to its
// target layout, or nil when it is there: every partition at min(RF, eligible
// nodes) replicas, placed on the eligible nodes holding the fewest replicas,
// and the metadata group with up to MetaVoters voters. It changes one thing
// at a time so that each step is replicated and applied before the next is
// decided.
func NextChange(m *Map) *Command {
	eligible := m.eligibleNodes()
	if len(eligible) == 0 {
		return nil
	}
	// Metadata voters first: they decide everything else.
	if m.voters(MetaGroup) < min(m.MetaVoters, len(eligible)) {
		for _, r := range m.Groups[MetaGroup].Replicas {
			if r.Role == RoleLearner && slices.Contains(eligible, r.Node) {
				return &Command{Op: OpSetRole, Group: MetaGroup, Replica: r.ID, Role: RoleVoter}
			}
		}
	}
	counts := m.ReplicaCount()
	for gi := 1; gi < len(m.Groups); gi++ {
		g := &m.Groups[gi]
		want := min(m.ReplicationFactor, len(eligible))
		if len(g.Replicas) >= want {
			continue
		}
		if node := leastLoaded(eligible, counts, g); node != "" {
			return &Command{Op: OpAddReplica, Group: g.ID, NodeID: node, Role: RoleVoter}
		}
	}
	return nil
}

// eligibleNodes returns the active, non-standby node ids in id order.
func (m *Map) eligibleNodes() []string {
	var ids []string
	for _, n := range m.Nodes {
		if n.State == NodeActive && !n.Standby {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// leastLoaded picks the eligible node without a replica of g that holds the
// fewest replicas; ties go to the smallest id, so every leader decides alike.
func leastLoaded(eligible []string, counts map[string]int, g *Group) string {
	best, bestN := "", 0
	for _, id := range eligible {
		if slices.ContainsFunc(g.Replicas, func(r Replica) bool { return r.Node == id }) {
			continue
		}
		if best == "" || counts[id] < bestN {
			best, bestN = id, counts[id]
		}
	}
	return best
}

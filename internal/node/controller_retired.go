package node

import (
	"maps"
	"slices"

	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
)

// maxRetired bounds how many replicas dropped from the map a node still
// resolves (the most recent ids are kept).
const maxRetired = 4096

// keepRetired carries over from prev the addresses of replicas the map no
// longer lists, while their node is still in the map, and returns v.
//
// The controller drops a replica from the map first; the group's leader
// then removes it from Raft. Until that removal applies, Raft still counts
// the replica as a voter: were it unreachable, a group of four voters that
// loses one more node (a zone outage in the middle of a move) would keep
// only two reachable voters of four and could never commit the removal.
// So the directory keeps resolving a retired replica to its node.
func (v *mapView) keepRetired(prev *mapView) *mapView {
	v.retired = map[uint64]string{}
	if prev == nil {
		return v
	}
	nodeAddr := map[string]string{}
	for _, nd := range v.m.Nodes {
		nodeAddr[nd.ID] = nd.Addr
	}
	gone := maps.Clone(prev.retired)
	for _, g := range prev.m.Groups {
		for _, r := range g.Replicas {
			gone[r.ID] = r.Node
		}
	}
	ids := slices.Sorted(maps.Keys(gone))
	for i := len(ids) - 1; i >= 0 && len(v.retired) < maxRetired; i-- {
		id, node := ids[i], gone[ids[i]]
		addr, ok := nodeAddr[node]
		if _, listed := v.addrOf[id]; listed || !ok {
			continue
		}
		v.retired[id] = node
		v.addrOf[id] = addr
	}
	return v
}

// retiredLeaderHandOff returns the replica a group's leader should hand
// leadership to when the map no longer lists the leader's own replica as a
// voter: a retired replica that is still reachable may win an election
// before its removal applies, and a leader never removes itself, so
// without a hand-over the group would keep it for good. It picks the
// caught-up voter of the map that is a voter in Raft too, lowest id first.
func retiredLeaderHandOff(st multiraft.GroupStatus, g *placement.Group) (uint64, bool) {
	if self, ok := replicaOf(g, st.Replica); ok && self.Role == placement.RoleVoter {
		return 0, false
	}
	for _, r := range g.Replicas {
		if r.Role == placement.RoleVoter && slices.Contains(st.ConfState.Voters, r.ID) && caughtUp(st, r.ID) {
			return r.ID, true
		}
	}
	return 0, false
}

// replicaOf returns replica id of group g in the map.
func replicaOf(g *placement.Group, id uint64) (placement.Replica, bool) {
	for _, r := range g.Replicas {
		if r.ID == id {
			return r, true
		}
	}
	return placement.Replica{}, false
}

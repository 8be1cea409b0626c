package node

import (
	"maps"
	"slices"
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

package node

import (
	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/placement"
)

// PartitionMap implements api.StatusSource for GET /api/v1/partitions:
// each partition's leader as this node knows it (its replica's view, else
// the router's last hint), by the leader node's advertised HTTP address.
// It asks no other node, so it is cheap enough for clients to poll.
func (n *Node) PartitionMap() api.PartitionMap {
	m := n.Map()
	if m == nil {
		return api.PartitionMap{Hash: placement.HashFNV1a64, Leaders: []string{}}
	}
	pm := api.PartitionMap{Hash: m.Hash, Partitions: m.Partitions, Leaders: make([]string, m.Partitions)}
	if nd, ok := m.Node(n.cfg.ID); ok {
		pm.Self = nd.HTTPAddr
	}
	for _, g := range m.Groups {
		if g.ID == placement.MetaGroup || g.ID > uint64(m.Partitions) {
			continue
		}
		lead := n.router.LeaderReplica(g.ID)
		if lead == 0 {
			continue
		}
		for _, r := range g.Replicas {
			if r.ID != lead {
				continue
			}
			if nd, ok := m.Node(r.Node); ok {
				pm.Leaders[g.ID-1] = nd.HTTPAddr
			}
			break
		}
	}
	return pm
}

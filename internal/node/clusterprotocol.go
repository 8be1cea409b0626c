package node

import "github.com/parley-chat/parley/internal/compat"

// ClusterProtocol returns the internal protocol every node of the cluster
// speaks (compat.ClusterProtocol over the protocols the nodes of the
// cluster map gossip; this node's own before it knows the map). Commands
// new at a protocol are proposed only once it is reached.
func (n *Node) ClusterProtocol() int {
	m := n.Map()
	if m == nil {
		return compat.ClusterProtocol(nil)
	}
	protocols := make([]int, 0, len(m.Nodes))
	for _, nd := range m.Nodes {
		_, p := n.memberBuild(nd.ID)
		protocols = append(protocols, p)
	}
	return compat.ClusterProtocol(protocols)
}

package client

import (
	"context"
	"slices"
)

// ClusterStatus is the cluster map with replica progress, as GET
// /api/v1/cluster returns it.
type ClusterStatus struct {
	ClusterID  string            `json:"cluster_id"`
	Nodes      []NodeStatus      `json:"nodes"`
	Partitions []PartitionStatus `json:"partitions"`
	Moves      []Move            `json:"moves"` // replica moves in progress
	// Protocol is the internal protocol every node speaks (the lowest of
	// the nodes'); it rises when the last node of an upgrade runs the new
	// release.
	Protocol int `json:"protocol"`
}

// NodeStatus describes one node.
type NodeStatus struct {
	ID       string `json:"id"`
	Addr     string `json:"addr"` // advertised HTTP address, host:port
	Zone     string `json:"zone"`
	State    string `json:"state"` // NodeAlive, or e.g. "unreachable", "suspect", "dead", "left", "draining"
	Standby  bool   `json:"standby"`
	Replicas int    `json:"replicas"` // partition replicas on the node
	Leaders  int    `json:"leaders"`  // partitions it leads
	Build    string `json:"build"`    // the binary it runs: version and commit; "" when not known
	Protocol int    `json:"protocol"` // the newest internal protocol it speaks
}

// NodeAlive is the State of a node that answers the cluster and that no
// member suspects.
const NodeAlive = "alive"

// Alive reports whether the cluster sees the node alive. A client that
// fails over to another node picks only alive ones: an unreachable,
// suspect, dead, left, draining or unknown node may be gone, or its address
// taken by someone else, and must not be sent a token.
func (n NodeStatus) Alive() bool { return n.State == NodeAlive }

// AliveAddrs returns the advertised HTTP addresses of the alive nodes, in
// the map's order, each once: the candidates of a client's failover.
func (st *ClusterStatus) AliveAddrs() []string {
	var out []string
	for _, n := range st.Nodes {
		if n.Alive() && n.Addr != "" && !slices.Contains(out, n.Addr) {
			out = append(out, n.Addr)
		}
	}
	return out
}

// UnderReplicated returns the ids of the partitions flagged
// under-replicated, in the status's order: none once the cluster is whole
// (what `parley cluster wait --replicated` waits for).
func (st *ClusterStatus) UnderReplicated() []uint64 {
	var ids []uint64
	for _, p := range st.Partitions {
		if p.UnderReplicated {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// PartitionStatus describes one partition.
type PartitionStatus struct {
	ID       uint64          `json:"id"`
	Leader   string          `json:"leader"` // node id, "" while there is none
	Replicas []ReplicaStatus `json:"replicas"`
	// UnderReplicated is true while the partition has no leader, a
	// membership change is in flight, or fewer voters than the replication
	// factor (fewer when the cluster has fewer nodes) are active and caught
	// up with the leader.
	UnderReplicated bool `json:"under_replicated"`
}

// ReplicaStatus describes one replica of a partition.
type ReplicaStatus struct {
	Node    string `json:"node"`
	Role    string `json:"role"` // "leader", "follower" or "learner"
	Applied uint64 `json:"applied"`
	// LagEntries and LagMs are how far behind the leader the replica is;
	// nil when unknown (an unreachable replica), 0 for the leader.
	LagEntries *uint64 `json:"lag_entries"`
	LagMs      *int64  `json:"lag_ms"`
}

// Move is a replica move in progress.
type Move struct {
	Partition uint64 `json:"partition"`
	From      string `json:"from"`
	To        string `json:"to"`
	Phase     string `json:"phase"`
}

// Cluster returns the cluster's nodes, partitions and moves in progress.
func (c *Client) Cluster(ctx context.Context) (*ClusterStatus, error) {
	var st ClusterStatus
	if _, err := c.getJSON(ctx, "/api/v1/cluster", nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

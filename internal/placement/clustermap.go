package placement

import (
	"slices"
)

// Node states in the cluster map.
const (
	NodeActive   = "active"
	NodeDraining = "draining"
)

// Replica roles in the cluster map: the role the replica should have. The
// group's leader makes Raft membership follow it, adding every replica as a
// learner first and promoting it once caught up.
const (
	RoleVoter   = "voter"
	RoleLearner = "learner"
)

// Map is the cluster map, the state of the metadata group.
type Map struct {
	// ClusterID identifies the cluster; every internal connection checks it.
	ClusterID string `json:"cluster_id"`
	// Hash names the partitioning hash (HashFNV1a64).
	Hash string `json:"hash"`
	// Partitions is P, fixed at creation.
	Partitions int `json:"partitions"`
	// ReplicationFactor is the target number of replicas per partition.
	ReplicationFactor int `json:"replication_factor"`
	// MetaVoters is the target number of voters of the metadata group.
	MetaVoters int `json:"meta_voters"`
	// Term is the highest metadata leader term of a fenced command applied
	// (see Command.Term).
	Term uint64 `json:"term,omitempty"`
	// NextReplicaID is the next Raft replica id to hand out; ids are never
	// reused.
	NextReplicaID uint64 `json:"next_replica_id"`
	// Nodes are the members, sorted by id.
	Nodes []Node `json:"nodes"`
	// Groups are the metadata group (index 0) and the partitions 1..P.
	Groups []Group `json:"groups"`
	// Revoked lists the certificates of removed nodes: refused on the
	// cluster port by every node, and never accepted for a join again.
	Revoked []Revocation `json:"revoked,omitempty"`
}

// Revocation is one revoked node certificate.
type Revocation struct {
	Node        string `json:"node"`
	Fingerprint string `json:"fingerprint"`
}

// Node is one member of the cluster.
type Node struct {
	ID          string `json:"id"`
	Incarnation string `json:"incarnation"`
	Addr        string `json:"addr"`
	HTTPAddr    string `json:"http_addr"`
	// GossipAddr is where the node's membership gossip listens; empty in
	// maps from before gossip, meaning Addr's port plus one.
	GossipAddr string `json:"gossip_addr,omitempty"`
	Zone       string `json:"zone,omitempty"`
	Standby    bool   `json:"standby,omitempty"`
	State      string `json:"state"`
	// CertFP is the fingerprint (pki.Fingerprint) of the certificate the
	// node joined with; empty in clusters without a cluster CA.
	CertFP string `json:"cert_fp,omitempty"`
}

// Group is a Raft group and where its replicas should be.
type Group struct {
	ID       uint64    `json:"id"`
	Replicas []Replica `json:"replicas"`
}

// Replica is one replica of a group.
type Replica struct {
	ID   uint64 `json:"id"`
	Node string `json:"node"`
	Role string `json:"role"`
}

// Node returns the node with the given id.
func (m *Map) Node(id string) (*Node, bool) {
	i, ok := slices.BinarySearchFunc(m.Nodes, id, func(n Node, id string) int {
		switch {
		case n.ID < id:
			return -1
		case n.ID > id:
			return 1
		}
		return 0
	})
	if !ok {
		return nil, false
	}
	return &m.Nodes[i], true
}

// Group returns the group with the given id.
func (m *Map) Group(id uint64) (*Group, bool) {
	if id >= uint64(len(m.Groups)) {
		return nil, false
	}
	return &m.Groups[id], true
}

// ReplicaNode returns the node holding a replica id, across all groups.
func (m *Map) ReplicaNode(replica uint64) (string, bool) {
	for _, g := range m.Groups {
		for _, r := range g.Replicas {
			if r.ID == replica {
				return r.Node, true
			}
		}
	}
	return "", false
}

// ReplicaOn returns the replica of group g on node, if any.
func (m *Map) ReplicaOn(g uint64, node string) (Replica, bool) {
	grp, ok := m.Group(g)
	if !ok {
		return Replica{}, false
	}
	for _, r := range grp.Replicas {
		if r.Node == node {
			return r, true
		}
	}
	return Replica{}, false
}

// Clone returns a deep copy of m.
func (m *Map) Clone() *Map {
	c := *m
	c.Nodes = slices.Clone(m.Nodes)
	c.Revoked = slices.Clone(m.Revoked)
	c.Groups = make([]Group, len(m.Groups))
	for i, g := range m.Groups {
		c.Groups[i] = Group{ID: g.ID, Replicas: slices.Clone(g.Replicas)}
	}
	return &c
}

// ReplicaCount returns how many replicas (of partitions and the metadata
// group) each node holds.
func (m *Map) ReplicaCount() map[string]int {
	n := map[string]int{}
	for _, g := range m.Groups {
		for _, r := range g.Replicas {
			n[r.Node]++
		}
	}
	return n
}

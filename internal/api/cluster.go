package api

import (
	"context"
	"io"
	"net/http"

	"github.com/parley-chat/parley/internal/errs"
)

// StatusSource tells the API about this node and the cluster.
type StatusSource interface {
	// Ready reports whether this node can serve requests.
	Ready() bool
	// ClusterStatus returns the cluster map with replica progress.
	ClusterStatus(ctx context.Context) (*ClusterStatus, error)
	// PartitionMap returns where each partition is led, as this node
	// knows it without asking others (GET /api/v1/partitions).
	PartitionMap() PartitionMap
}

// ClusterStatus is the body of GET /api/v1/cluster.
type ClusterStatus struct {
	ClusterID  string            `json:"cluster_id"`
	Nodes      []NodeStatus      `json:"nodes"`
	Partitions []PartitionStatus `json:"partitions"`
	// Moves lists the replica moves in progress.
	Moves []Move `json:"moves"`
	// Protocol is the internal protocol every node speaks: the lowest of
	// the nodes' (compat.ClusterProtocol). During a rolling upgrade it
	// stays at the old release's until the last node runs the new one.
	Protocol int `json:"protocol"`
}

// NodeStatus describes one node of the cluster.
type NodeStatus struct {
	ID   string `json:"id"`
	Addr string `json:"addr"` // advertised HTTP address
	Zone string `json:"zone"`
	// State is the node's health as the cluster sees it, e.g. "alive",
	// "suspect", "dead", "draining".
	State    string `json:"state"`
	Standby  bool   `json:"standby"`
	Replicas int    `json:"replicas"` // partition replicas on the node
	Leaders  int    `json:"leaders"`  // partitions the node leads
	// Build is the binary the node runs ("" when it does not say: a build
	// from before it was gossiped, or a node not heard from).
	Build string `json:"build"`
	// Protocol is the newest internal protocol the node speaks: 1 for a
	// build from before it was gossiped, or a node not heard from.
	Protocol int `json:"protocol"`
}

// PartitionStatus describes one partition (Raft group).
type PartitionStatus struct {
	ID       uint64          `json:"id"`
	Leader   string          `json:"leader"` // node id; "" while there is none
	Replicas []ReplicaStatus `json:"replicas"`
	// UnderReplicated is true while the partition has no leader, a
	// membership change is in flight, or fewer voters than the replication
	// factor (fewer when the cluster has fewer nodes) are active and caught
	// up with the leader.
	UnderReplicated bool `json:"under_replicated"`
}

// ReplicaStatus describes one replica of a partition.
type ReplicaStatus struct {
	Node string `json:"node"`
	// Role is "leader", "follower" or "learner".
	Role    string `json:"role"`
	Applied uint64 `json:"applied"` // applied Raft index
	// LagEntries and LagMs say how far behind the leader the replica is:
	// entries, and ms (the latest lag sample; 0 once the replica has
	// everything and sampled over 10 s ago). Both are null when unknown
	// (the replica's node did not answer: "unreachable"), and 0 for the
	// leader itself.
	LagEntries *uint64 `json:"lag_entries"`
	LagMs      *int64  `json:"lag_ms"`
}

// Move is a replica move in progress.
type Move struct {
	Partition uint64 `json:"partition"`
	From      string `json:"from"` // node losing the replica; "" when adding
	To        string `json:"to"`   // node gaining the replica; "" when removing
	// Phase is e.g. "learner", "promoting", "removing".
	Phase string `json:"phase"`
}

// healthz serves GET /healthz: the process is alive.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok")
}

// readyz serves GET /readyz: 200 once the node can serve, else 503.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !s.status.Ready() {
		s.writeError(w, r, errs.New(errs.Unavailable, "node is not ready"))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok")
}

// cluster serves GET /api/v1/cluster.
func (s *Server) cluster(w http.ResponseWriter, r *http.Request) {
	st, err := s.status.ClusterStatus(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if st == nil {
		st = &ClusterStatus{}
	}
	out := *st
	// Empty lists are [] rather than null for clients.
	if out.Nodes == nil {
		out.Nodes = []NodeStatus{}
	}
	if out.Partitions == nil {
		out.Partitions = []PartitionStatus{}
	}
	if out.Moves == nil {
		out.Moves = []Move{}
	}
	writeJSON(w, http.StatusOK, out)
}

package api

import (
	"context"
	"net/http"
)

// ClusterOps serves the operator endpoints beyond the cluster map: replica
// verification, replica lag and per-node request figures. A StatusSource
// that also implements it gets GET /api/v1/cluster/lag, GET
// /api/v1/cluster/stats and POST /api/v1/cluster/verify (admin only).
type ClusterOps interface {
	// Verify compares a checksum of every replica of every group at one
	// applied index per group.
	Verify(ctx context.Context) (*VerifyReport, error)
	// ClusterLag gathers every node's recent replica lag figures.
	ClusterLag(ctx context.Context) (*LagReport, error)
	// ClusterStats gathers every node's request and cache figures.
	ClusterStats(ctx context.Context) (*StatsReport, error)
}

// VerifyReport is the body of POST /api/v1/cluster/verify.
type VerifyReport struct {
	// Partitions lists every group, the metadata group (0) included.
	Partitions []PartitionCheck `json:"partitions"`
	// Mismatches counts groups whose replicas reported different checksums.
	Mismatches int `json:"mismatches"`
	// Unverified counts groups where some replica could not report (down,
	// too far behind, or caught up by a snapshot past every marker).
	Unverified int `json:"unverified"`
}

// PartitionCheck is one group's verification.
type PartitionCheck struct {
	Group uint64 `json:"group"`
	// Applied is the index at which the replicas were compared.
	Applied  uint64         `json:"applied"`
	Replicas []ReplicaCheck `json:"replicas"`
	// Match is true when every replica reported the same checksum.
	Match bool `json:"match"`
}

// ReplicaCheck is one replica's checksum.
type ReplicaCheck struct {
	Node    string `json:"node"`
	Replica uint64 `json:"replica"`
	// Applied is the index the checksum describes (the replica's applied
	// index when it could not report one).
	Applied uint64 `json:"applied"`
	// Checksum is the state's xxhash64 in hex; "" when Error says why not.
	Checksum string `json:"checksum"`
	Error    string `json:"error,omitempty"`
}

// LagReport is the body of GET /api/v1/cluster/lag.
type LagReport struct {
	// WindowMs is the span of recent samples each node summarises.
	WindowMs int64        `json:"window_ms"`
	Replicas []ReplicaLag `json:"replicas"`
	// Unreachable lists the nodes that did not answer in time.
	Unreachable []string `json:"unreachable"`
}

// ReplicaLag is one replica's lag over the window: one sample per applied
// command, taken when it became visible on the replica.
type ReplicaLag struct {
	Group   uint64 `json:"group"`
	Node    string `json:"node"`
	Replica uint64 `json:"replica"`
	// Role is the replica's current role: "leader", "follower" or "learner".
	Role    string `json:"role"`
	Samples int    `json:"samples"`
	// LagMs is the time from the leader stamping a command to its apply
	// here; LagEntries the entries this replica was behind the leader's
	// commit index when it applied.
	LagMs      Quantiles `json:"lag_ms"`
	LagEntries Quantiles `json:"lag_entries"`
}

// Quantiles summarises samples.
type Quantiles struct {
	P50 int64 `json:"p50"`
	P99 int64 `json:"p99"`
	Max int64 `json:"max"`
}

// StatsReport is the body of GET /api/v1/cluster/stats.
type StatsReport struct {
	Nodes []NodeStats `json:"nodes"`
}

// NodeStats are one node's figures since it started.
type NodeStats struct {
	Node string `json:"node"`
	// State is "alive" or "unreachable" (the figures are then zero).
	State string `json:"state"`
	// RequestsOK counts HTTP answers below 500, RequestsFailed 5xx answers.
	RequestsOK     uint64 `json:"requests_ok"`
	RequestsFailed uint64 `json:"requests_failed"`
	// RequestsPerSec is the request rate over the last 10 seconds.
	RequestsPerSec float64 `json:"requests_per_sec"`
	// CacheHits and CacheMisses count the short-link read cache.
	CacheHits   uint64 `json:"cache_hits"`
	CacheMisses uint64 `json:"cache_misses"`
	// StreamSubscribers is the number of live stream subscriptions.
	StreamSubscribers int64 `json:"stream_subscribers"`
}

// opsRoutes registers the operator endpoints when the status source serves
// them.
func (s *Server) opsRoutes() {
	ops, ok := s.status.(ClusterOps)
	if !ok {
		return
	}
	s.handleAdmin("POST /api/v1/cluster/verify", "verify the cluster", func(w http.ResponseWriter, r *http.Request) {
		rep, err := ops.Verify(r.Context())
		s.writeOps(w, r, rep, err)
	})
	s.handleAuth("GET /api/v1/cluster/lag", func(w http.ResponseWriter, r *http.Request) {
		rep, err := ops.ClusterLag(r.Context())
		s.writeOps(w, r, rep, err)
	})
	s.handleAuth("GET /api/v1/cluster/stats", func(w http.ResponseWriter, r *http.Request) {
		rep, err := ops.ClusterStats(r.Context())
		s.writeOps(w, r, rep, err)
	})
}

func (s *Server) writeOps(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

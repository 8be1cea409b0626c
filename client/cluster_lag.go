package client

import "context"

// LagReport is the answer of GET /api/v1/cluster/lag: every replica's lag
// over each node's recent window, one sample per applied command.
type LagReport struct {
	WindowMs    int64        `json:"window_ms"`
	Replicas    []ReplicaLag `json:"replicas"`
	Unreachable []string     `json:"unreachable"` // nodes that did not answer
}

// ReplicaLag is one replica's lag: LagMs from the leader stamping a command
// to its apply on the replica, LagEntries how many entries the replica was
// behind the leader's commit index then.
type ReplicaLag struct {
	Group      uint64    `json:"group"`
	Node       string    `json:"node"`
	Replica    uint64    `json:"replica"`
	Role       string    `json:"role"` // "leader", "follower" or "learner"
	Samples    int       `json:"samples"`
	LagMs      Quantiles `json:"lag_ms"`
	LagEntries Quantiles `json:"lag_entries"`
}

// Quantiles summarises samples.
type Quantiles struct {
	P50 int64 `json:"p50"`
	P99 int64 `json:"p99"`
	Max int64 `json:"max"`
}

// ClusterLag returns every replica's recent lag behind its leader.
func (c *Client) ClusterLag(ctx context.Context) (*LagReport, error) {
	var rep LagReport
	if _, err := c.getJSON(ctx, "/api/v1/cluster/lag", nil, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

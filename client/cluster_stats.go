package client

import "context"

// StatsReport is the answer of GET /api/v1/cluster/stats.
type StatsReport struct {
	Nodes []NodeStats `json:"nodes"`
}

// NodeStats are one node's figures since it started.
type NodeStats struct {
	Node  string `json:"node"`
	State string `json:"state"` // "alive" or "unreachable" (figures then zero)
	// RequestsOK counts answers below 500, RequestsFailed 5xx answers.
	RequestsOK     uint64  `json:"requests_ok"`
	RequestsFailed uint64  `json:"requests_failed"`
	RequestsPerSec float64 `json:"requests_per_sec"` // over the last 10 s
	// CacheHits and CacheMisses count the short-link read cache.
	CacheHits         uint64 `json:"cache_hits"`
	CacheMisses       uint64 `json:"cache_misses"`
	StreamSubscribers int64  `json:"stream_subscribers"`
}

// ClusterStats returns every node's request and cache figures.
func (c *Client) ClusterStats(ctx context.Context) (*StatsReport, error) {
	var rep StatsReport
	if _, err := c.getJSON(ctx, "/api/v1/cluster/stats", nil, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

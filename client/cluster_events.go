package client

import "context"

// ClusterEvent is one entry of GET /api/v1/cluster/events: something that
// happened to the cluster (a node suspected or dead, a replica added or
// removed, a leader moved, a disk full, a clock jump).
type ClusterEvent struct {
	// Ts is when it was recorded, in Unix milliseconds.
	Ts int64 `json:"ts"`
	// Kind names it: node_dead, replica_added, disk_full, clock_jump, ...
	Kind string `json:"kind"`
	// Node is the node it is about ("" when none).
	Node string `json:"node"`
	// Group is the partition concerned (0: the metadata group or none).
	Group  uint64 `json:"group"`
	Detail string `json:"detail"`
}

// ClusterEvents returns the recent events of every node, oldest first.
func (c *Client) ClusterEvents(ctx context.Context) ([]ClusterEvent, error) {
	var body struct {
		Events []ClusterEvent `json:"events"`
	}
	if _, err := c.getJSON(ctx, "/api/v1/cluster/events", nil, &body); err != nil {
		return nil, err
	}
	return body.Events, nil
}

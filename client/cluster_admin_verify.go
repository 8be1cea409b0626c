package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// VerifyReport is the answer to Verify: every partition's replicas, and the
// metadata group's, compared by a checksum of their state at the same
// applied index.
type VerifyReport struct {
	// Partitions lists every group: the partitions and the metadata group,
	// whose Group is 0.
	Partitions []PartitionCheck `json:"partitions"`
	// Mismatches counts the groups whose replicas disagree.
	Mismatches int `json:"mismatches"`
	// Unverified counts the groups where some replica could not report
	// (down, too far behind, or caught up by a snapshot past every marker).
	Unverified int `json:"unverified"`
}

// PartitionCheck is one partition's comparison.
type PartitionCheck struct {
	// Group is the partition's Raft group id.
	Group uint64 `json:"group"`
	// Applied is the index at which the checksums were taken.
	Applied  uint64         `json:"applied"`
	Replicas []ReplicaCheck `json:"replicas"`
	// Match is true when every replica's checksum is the same.
	Match bool `json:"match"`
}

// ReplicaCheck is one replica's checksum.
type ReplicaCheck struct {
	Node     string   `json:"node"`
	Replica  uint64   `json:"replica"` // Raft replica id
	Applied  uint64   `json:"applied"`
	Checksum Checksum `json:"checksum"` // "" when Error says why there is none
	Error    string   `json:"error,omitempty"`
}

// Checksum is a replica's state checksum as the server wrote it (16 hex
// digits of an xxhash64); a JSON number is accepted too, kept as its text.
type Checksum string

// UnmarshalJSON implements json.Unmarshaler for strings and numbers.
func (c *Checksum) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Checksum(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("checksum %s: want a string or a number", b)
	}
	*c = Checksum(n)
	return nil
}

// Verify asks the cluster to compare the replicas of every partition by
// checksum at the same applied index (admin only, 403 otherwise).
func (c *Client) Verify(ctx context.Context) (*VerifyReport, error) {
	var r VerifyReport
	if _, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/cluster/verify", struct{}{}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

package client

import (
	"context"
	"io"
	"net/http"
	"strconv"
)

// BackupManifest describes the cluster a backup is taken of: what a
// backup file's header records.
type BackupManifest struct {
	ClusterID         string `json:"cluster_id"`
	Hash              string `json:"hash"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	// DataFormat is the data format of the nodes' state records.
	DataFormat int `json:"data_format"`
}

// BackupManifest returns what a backup of the cluster would be of (admin
// only).
func (c *Client) BackupManifest(ctx context.Context) (*BackupManifest, error) {
	var m BackupManifest
	if _, err := c.getJSON(ctx, "/api/v1/cluster/backup", nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// BackupGroup returns the stream of one group's backup section (admin
// only): group 0 is the metadata group, 1..P the partitions. The section
// is the group's state at one applied index, read after a linearizable
// read barrier; internal/backup's Writer.CopySection checks and stores it.
// The caller closes the stream. A stream cut half-way ends in an error or
// in a section that fails its checksum: ask for the group again.
func (c *Client) BackupGroup(ctx context.Context, group uint64) (io.ReadCloser, error) {
	resp, err := c.do(ctx, http.MethodGet, "/api/v1/cluster/backup/"+strconv.FormatUint(group, 10), nil, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

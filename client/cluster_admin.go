package client

import (
	"context"
	"net/http"
	"net/url"
)

// DrainResult is the answer to DrainNode: the replica moves the placement
// controller planned to empty the node. Progress shows in Cluster's Moves
// and in the node's Replicas count.
type DrainResult struct {
	Node  string `json:"node"`
	Moves []Move `json:"moves"`
}

// DrainNode asks the cluster to move every replica off node id (admin
// only, 403 otherwise). The call returns once the moves are planned, before
// they are done; a drain the cluster cannot carry out (it would leave a
// partition without a majority or too few nodes) is an *Error with status
// 409 or 400 saying why, an unknown node 404.
func (c *Client) DrainNode(ctx context.Context, id string) (DrainResult, error) {
	var r DrainResult
	_, err := c.sendJSON(ctx, http.MethodPost, nodePath(id, "/drain"), struct{}{}, &r)
	if r.Node == "" {
		r.Node = id
	}
	return r, err
}

// RemoveNode makes the cluster forget node id (admin only). Only a drained
// or dead node may be removed; removing another is an *Error with status
// 409.
func (c *Client) RemoveNode(ctx context.Context, id string) error {
	_, err := c.sendJSON(ctx, http.MethodDelete, nodePath(id, ""), nil, nil)
	return err
}

func nodePath(id, suffix string) string {
	return "/api/v1/cluster/nodes/" + url.PathEscape(id) + suffix
}

package client

import (
	"context"
)

// OnlineUsers returns the users online anywhere in the cluster, in
// case-insensitive name order. A user is online while they have a live
// stream connection on some node; they show offline at once when it closes
// cleanly and within 15 s when their node dies. The server answers GET
// /api/v1/users/online with {"users":[{"username":"alice"},...]}.
func (c *Client) OnlineUsers(ctx context.Context) ([]string, error) {
	var out struct {
		Users []struct {
			Username string `json:"username"`
		} `json:"users"`
	}
	if _, err := c.getJSON(ctx, "/api/v1/users/online", nil, &out); err != nil {
		return nil, err
	}
	users := make([]string, len(out.Users))
	for i, u := range out.Users {
		users[i] = u.Username
	}
	return users, nil
}

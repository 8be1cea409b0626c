package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// JoinToken describes a cluster join token. Token, the whole token with its
// secret, is set only in the answer that made it.
type JoinToken struct {
	ID        string     `json:"id"`
	Name      string     `json:"name,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Token     string     `json:"token,omitempty"`
}

// JoinTokens lists the cluster's usable join tokens, without secrets
// (admin only).
func (c *Client) JoinTokens(ctx context.Context) ([]JoinToken, error) {
	var r struct {
		Tokens []JoinToken `json:"tokens"`
	}
	_, err := c.getJSON(ctx, "/api/v1/cluster/tokens", nil, &r)
	return r.Tokens, err
}

// CreateJoinToken makes a join token named name, valid for ttl (0: until
// revoked); the answer carries the token, shown this once (admin only).
func (c *Client) CreateJoinToken(ctx context.Context, name string, ttl time.Duration) (JoinToken, error) {
	var t JoinToken
	in := map[string]any{"name": name, "ttl_seconds": int64(ttl / time.Second)}
	_, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/cluster/tokens", in, &t)
	return t, err
}

// RevokeJoinToken makes join token id unusable (admin only).
func (c *Client) RevokeJoinToken(ctx context.Context, id string) error {
	_, err := c.sendJSON(ctx, http.MethodDelete, "/api/v1/cluster/tokens/"+url.PathEscape(id), nil, nil)
	return err
}

// RotateJoinTokens makes a new join token, revokes every other one and puts
// a new gossip key in use (admin only); the answer carries the new token.
func (c *Client) RotateJoinTokens(ctx context.Context) (JoinToken, error) {
	var t JoinToken
	_, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/cluster/tokens/rotate", struct{}{}, &t)
	return t, err
}

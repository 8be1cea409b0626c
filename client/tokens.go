package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// APIToken describes a personal API token. Token, the secret, is set only
// in the answer that made it: the cluster keeps only its digest.
type APIToken struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Username string   `json:"username"`
	Scopes   []string `json:"scopes"`
	// CreatedAt, ExpiresAt and LastUsedAt are Unix ms; LastUsedAt is nil
	// for a token never used (uses are recorded up to a minute late).
	CreatedAt  int64  `json:"created_at"`
	ExpiresAt  int64  `json:"expires_at"`
	LastUsedAt *int64 `json:"last_used_at"`
	Expired    bool   `json:"expired"`
	Token      string `json:"token,omitempty"`
}

// CreateAPIToken makes a personal API token named name with scopes ("read",
// "write", "admin", or narrowed: "write:room/general", "read:queue/jobs")
// that lasts ttl (0: 90 days, the server's default). A Client signed in
// with a session must make it: tokens cannot make tokens. Give the token to
// New with WithToken, or to the CLI as --token or $PARLEY_TOKEN. It is not
// idempotent: a retry makes a second token.
func (c *Client) CreateAPIToken(ctx context.Context, name string, scopes []string, ttl time.Duration) (APIToken, error) {
	in := map[string]any{"name": name, "scopes": scopes}
	if ttl > 0 {
		in["expires_in"] = int64((ttl + time.Second - 1) / time.Second)
	}
	var t APIToken
	_, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/tokens", in, &t)
	return t, err
}

// APITokens lists the personal API tokens of the signed-in user, or, for
// an admin, of user (user "": one's own), without their secrets.
func (c *Client) APITokens(ctx context.Context, user string) ([]APIToken, error) {
	var q url.Values
	if user != "" {
		q = url.Values{"user": {user}}
	}
	var r struct {
		Tokens []APIToken `json:"tokens"`
	}
	_, err := c.getJSON(ctx, "/api/v1/tokens", q, &r)
	return r.Tokens, err
}

// RevokeAPIToken revokes the personal API token id of the signed-in user,
// or, for an admin, of user: it stops working on every node within a
// second. An unknown id is an *Error with status 404.
func (c *Client) RevokeAPIToken(ctx context.Context, user, id string) error {
	p := "/api/v1/tokens/" + url.PathEscape(id)
	if user != "" {
		p += "?" + url.Values{"user": {user}}.Encode()
	}
	_, err := c.sendJSON(ctx, http.MethodDelete, p, nil, nil)
	return err
}

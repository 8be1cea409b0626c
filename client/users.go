package client

import (
	"context"
	"net/http"
)

// User is a registered user.
type User struct {
	Username  string `json:"username"`
	Admin     bool   `json:"admin"`
	CreatedAt int64  `json:"created_at"` // Unix ms
}

// Session is the answer to a login.
type Session struct {
	Token     string `json:"token"`
	Username  string `json:"username"`
	ExpiresAt int64  `json:"expires_at"` // Unix ms
}

type credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// Register creates a user; the first user of a cluster is admin. A name
// taken in any case is an *Error with status 409, an invalid name or
// password 400, registration closed to non-admins 403, too many attempts
// from this address 429. A signed-in admin's Client may register users when
// registration is closed.
func (c *Client) Register(ctx context.Context, username, password string) (User, error) {
	var u User
	_, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/users", credentials{username, password}, &u)
	return u, err
}

// Login opens a session and keeps its token in the Client, which sends it
// with every later call. Wrong credentials are an *Error with status 401.
func (c *Client) Login(ctx context.Context, username, password string) (Session, error) {
	var s Session
	if _, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/sessions", credentials{username, password}, &s); err != nil {
		return Session{}, err
	}
	c.SetToken(s.Token)
	return s, nil
}

// Logout ends the Client's session: its token stops working on every node
// within a second, and the Client forgets it.
func (c *Client) Logout(ctx context.Context) error {
	if _, err := c.sendJSON(ctx, http.MethodDelete, "/api/v1/sessions/current", nil, nil); err != nil {
		return err
	}
	c.SetToken("")
	return nil
}

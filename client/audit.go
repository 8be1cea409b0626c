package client

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// AuditEvent is one audited occurrence on one node: a login, a logout, an
// admin-only call, a refused internal call, a join... Actor, Target and
// Detail may hold text a client chose (a user name typed at login): escape
// control characters before printing them to a terminal.
type AuditEvent struct {
	Time    time.Time `json:"time"`
	Node    string    `json:"node"`
	Kind    string    `json:"kind"`
	Outcome string    `json:"outcome"` // "ok", "refused" or "failed"
	Actor   string    `json:"actor,omitempty"`
	Remote  string    `json:"remote,omitempty"`
	Target  string    `json:"target,omitempty"`
	Detail  string    `json:"detail,omitempty"`
}

// AuditReport is the answer of GET /api/v1/audit.
type AuditReport struct {
	Events      []AuditEvent `json:"events"`      // oldest first
	Unreachable []string     `json:"unreachable"` // nodes whose events are missing
}

// AuditQuery selects audit events; its zero value asks for the newest 100
// of every kind.
type AuditQuery struct {
	Kind  string    // only events of this kind
	Actor string    // only events of this actor (ignoring case)
	Since time.Time // only events at or after this time
	Limit int       // the newest Limit (1 to 1000; 0: the server's default)
}

// Audit returns the audit events of every node matching q, oldest first
// (admin only).
func (c *Client) Audit(ctx context.Context, q AuditQuery) (*AuditReport, error) {
	v := url.Values{}
	if q.Kind != "" {
		v.Set("kind", q.Kind)
	}
	if q.Actor != "" {
		v.Set("actor", q.Actor)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var rep AuditReport
	if _, err := c.getJSON(ctx, "/api/v1/audit", v, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

package client

import (
	"context"
	"net/http"
	"net/url"
)

// OutgoingHook is an outgoing webhook of a room: it POSTs the room's
// messages (or those whose first word is a trigger word) to URL, signed
// with Secret, which only the answer to its creation carries.
type OutgoingHook struct {
	ID           string   `json:"id"`
	Room         string   `json:"room"`
	Name         string   `json:"name"`
	URL          string   `json:"url"`
	TriggerWords []string `json:"trigger_words"`
	Creator      string   `json:"creator"`
	CreatedAt    int64    `json:"created_at"`
	Secret       string   `json:"secret,omitempty"`
}

// OutgoingHookSpec is what CreateOutgoingHook makes: no TriggerWords means
// every message of the room.
type OutgoingHookSpec struct {
	Name         string   `json:"name"`
	URL          string   `json:"url"`
	TriggerWords []string `json:"trigger_words,omitempty"`
}

// Delivery is one attempt of an outgoing webhook's delivery log.
type Delivery struct {
	ID      string `json:"id"`
	Seq     uint64 `json:"seq"`
	Attempt uint64 `json:"attempt"`
	Status  int    `json:"status,omitempty"`
	Error   string `json:"error,omitempty"`
	// Outcome is retry, delivered, gave_up or dropped.
	Outcome string `json:"outcome"`
	Ts      int64  `json:"ts"`
}

// CreateOutgoingHook adds an outgoing webhook to room (its owner or an
// admin may). The answer's Secret signs every delivery and is never shown
// again. A URL at a private address the server does not allow is refused
// (403).
func (c *Client) CreateOutgoingHook(ctx context.Context, room string, spec OutgoingHookSpec) (OutgoingHook, error) {
	var h OutgoingHook
	_, err := c.sendJSON(ctx, http.MethodPost, roomPath(room, "/outgoing-hooks"), spec, &h)
	return h, err
}

// OutgoingHooks lists room's outgoing webhooks without their secrets.
func (c *Client) OutgoingHooks(ctx context.Context, room string) ([]OutgoingHook, error) {
	var r struct {
		Hooks []OutgoingHook `json:"hooks"`
	}
	_, err := c.getJSON(ctx, roomPath(room, "/outgoing-hooks"), nil, &r)
	return r.Hooks, err
}

// DeleteOutgoingHook deletes room's outgoing webhook id and its log.
func (c *Client) DeleteOutgoingHook(ctx context.Context, room, id string) error {
	_, err := c.sendJSON(ctx, http.MethodDelete, roomPath(room, "/outgoing-hooks/"+url.PathEscape(id)), nil, nil)
	return err
}

// OutgoingHookDeliveries returns the recent delivery attempts of room's
// outgoing webhook id, newest first.
func (c *Client) OutgoingHookDeliveries(ctx context.Context, room, id string) ([]Delivery, error) {
	var r struct {
		Deliveries []Delivery `json:"deliveries"`
	}
	_, err := c.getJSON(ctx, roomPath(room, "/outgoing-hooks/"+url.PathEscape(id)+"/deliveries"), nil, &r)
	return r.Deliveries, err
}

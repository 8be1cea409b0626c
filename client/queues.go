package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Queue describes a queue.
type Queue struct {
	Name      string `json:"name"`
	Creator   string `json:"creator"`
	CreatedAt int64  `json:"created_at"` // Unix ms
	Messages  uint64 `json:"messages"`   // stored, in flight included
	InFlight  uint64 `json:"in_flight"`  // under a lease
	LastID    uint64 `json:"last_id"`    // id of the last message sent
}

// SendResult is the answer to a send.
type SendResult struct {
	ID uint64 `json:"id"`
	Ts int64  `json:"ts"` // Unix ms
}

// QueueMessage is a message taken or peeked from a queue.
type QueueMessage struct {
	ID     uint64 `json:"id"`
	Sender string `json:"sender"`
	// To is the receiver it was sent to; "" for anyone.
	To         string `json:"to,omitempty"`
	Ts         int64  `json:"ts"` // Unix ms
	Body       string `json:"body"`
	Deliveries uint64 `json:"deliveries"`
	// Receipt acknowledges a leased message (see Ack); LeaseExpiresAt is
	// when its lease lapses (Unix ms).
	Receipt        string `json:"receipt,omitempty"`
	LeaseExpiresAt int64  `json:"lease_expires_at,omitempty"`
}

// SendOptions qualify Send.
type SendOptions struct {
	// To sends the message to one receiver; "" to anyone.
	To string
}

// ReceiveOptions qualify Receive.
type ReceiveOptions struct {
	// From takes only messages from this sender.
	From string
	// AckTimeout, when > 0, leases the message instead of removing it: Ack
	// it before the lease lapses or it is delivered again.
	AckTimeout time.Duration
	// Wait, when > 0, long-polls up to this long for a message.
	Wait time.Duration
}

// CreateQueue creates a queue owned by the caller; 409 when it exists.
func (c *Client) CreateQueue(ctx context.Context, name string) (Queue, error) {
	var q Queue
	_, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/queues", map[string]string{"name": name}, &q)
	return q, err
}

// DeleteQueue deletes a queue and all its messages (its creator or an admin
// may).
func (c *Client) DeleteQueue(ctx context.Context, name string) error {
	_, err := c.sendJSON(ctx, http.MethodDelete, queuePath(name, ""), nil, nil)
	return err
}

// ListQueues returns every queue in name order, or with waitingOnly only
// those holding a message the caller may receive now.
func (c *Client) ListQueues(ctx context.Context, waitingOnly bool) ([]Queue, error) {
	q := url.Values{}
	if waitingOnly {
		q.Set("waiting", "true")
	}
	var out struct {
		Queues []Queue `json:"queues"`
	}
	_, err := c.getJSON(ctx, "/api/v1/queues", q, &out)
	return out.Queues, err
}

// Send appends body to a queue, for anyone or for opts.To.
func (c *Client) Send(ctx context.Context, queue, body string, opts SendOptions) (SendResult, error) {
	in := struct {
		Body string `json:"body"`
		To   string `json:"to,omitempty"`
	}{body, opts.To}
	var r SendResult
	_, err := c.sendJSON(ctx, http.MethodPost, queuePath(queue, "/messages"), in, &r)
	return r, err
}

// Peek returns the message Receive would take (only from sender from when
// not ""), without taking it; found is false when there is none.
func (c *Client) Peek(ctx context.Context, queue, from string) (msg QueueMessage, found bool, err error) {
	path := queuePath(queue, "/peek")
	if from != "" {
		path += "?" + url.Values{"from": {from}}.Encode()
	}
	status, err := c.sendJSON(ctx, http.MethodGet, path, nil, &msg)
	return msg, err == nil && status == http.StatusOK, err
}

// Receive takes the oldest message for the caller or for anyone; found is
// false when none came (within opts.Wait).
func (c *Client) Receive(ctx context.Context, queue string, opts ReceiveOptions) (msg QueueMessage, found bool, err error) {
	in := struct {
		From         string `json:"from,omitempty"`
		AckTimeoutMs int64  `json:"ack_timeout_ms,omitempty"`
		WaitMs       int64  `json:"wait_ms,omitempty"`
	}{opts.From, ceilMs(opts.AckTimeout), ceilMs(opts.Wait)}
	status, err := c.sendJSON(ctx, http.MethodPost, queuePath(queue, "/receive"), in, &msg)
	return msg, err == nil && status == http.StatusOK, err
}

// Ack acknowledges a leased message. A lapsed lease or an unknown receipt
// is an *Error with status 409.
func (c *Client) Ack(ctx context.Context, queue, receipt string) error {
	_, err := c.sendJSON(ctx, http.MethodPost, queuePath(queue, "/ack"), map[string]string{"receipt": receipt}, nil)
	return err
}

func queuePath(queue, suffix string) string {
	return "/api/v1/queues/" + url.PathEscape(queue) + suffix
}

// ceilMs rounds a duration up to whole milliseconds.
func ceilMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

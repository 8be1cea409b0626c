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
	// MaxDeliveries is how many times a message may be leased before it is
	// dead-lettered (0: unlimited); DeadLetter the queue dead letters go to
	// ("" drops them); TTLMs the queue's message TTL (0: none); MaxLength
	// the most messages not leased (0: unlimited); Overflow what a send to
	// a full queue does: "reject" or "drop_oldest".
	MaxDeliveries uint64     `json:"max_deliveries"`
	DeadLetter    string     `json:"dead_letter,omitempty"`
	TTLMs         int64      `json:"ttl_ms,omitempty"`
	MaxLength     uint64     `json:"max_length,omitempty"`
	Overflow      string     `json:"overflow"`
	Stats         QueueStats `json:"stats"`
}

// QueueStats are a queue's counts.
type QueueStats struct {
	Ready   uint64 `json:"ready"`
	Leased  uint64 `json:"leased"`
	Delayed uint64 `json:"delayed"`
	// Waiting counts messages behind an earlier one of their FIFO group.
	Waiting uint64 `json:"waiting"`
	// DeadLetters counts the stored messages that arrived as dead letters.
	DeadLetters uint64 `json:"dead_letters"`
	// DeadLettered, Dropped and Expired count since the queue's creation.
	DeadLettered uint64 `json:"dead_lettered"`
	Dropped      uint64 `json:"dropped"`
	Expired      uint64 `json:"expired"`
	// Moving counts messages on their way to another queue.
	Moving uint64 `json:"moving"`
	// OldestAt is the send time of the oldest message (Unix ms), 0 when
	// there is none.
	OldestAt int64 `json:"oldest_at,omitempty"`
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
	Priority       int    `json:"priority,omitempty"`
	Group          string `json:"group,omitempty"`
	ExpiresAt      int64  `json:"expires_at,omitempty"` // Unix ms
	// DeliverAt and State ("ready", "leased", "delayed", "waiting") are
	// set by Browse.
	DeliverAt int64  `json:"deliver_at,omitempty"`
	State     string `json:"state,omitempty"`
	// Origin (the queue it was dead-lettered from), DeadReason
	// ("rejected", "delivery_limit", "expired", "max_length") and
	// LastReason (of its last nack) are set on dead letters.
	Origin     string `json:"origin,omitempty"`
	DeadReason string `json:"dead_reason,omitempty"`
	LastReason string `json:"last_reason,omitempty"`
}

// SendOptions qualify Send.
type SendOptions struct {
	// To sends the message to one receiver; "" to anyone.
	To string
	// Priority is 0 (default, lowest) to 9; higher priorities are received
	// first.
	Priority int
	// Delay delays delivery by this long; DeliverAt until then. At most one.
	Delay     time.Duration
	DeliverAt time.Time
	// TTL, when > 0, expires the message this long after the send.
	TTL time.Duration
	// Group puts the message in a FIFO group: its messages are delivered in
	// order, one at a time.
	Group string
}

// messageIn is a message to send in requests.
type messageIn struct {
	Body      string `json:"body"`
	To        string `json:"to,omitempty"`
	Priority  int    `json:"priority,omitempty"`
	DelayMs   int64  `json:"delay_ms,omitempty"`
	DeliverAt int64  `json:"deliver_at,omitempty"`
	TTLMs     int64  `json:"ttl_ms,omitempty"`
	Group     string `json:"group,omitempty"`
}

func messageInOf(body string, o SendOptions) messageIn {
	m := messageIn{Body: body, To: o.To, Priority: o.Priority, DelayMs: ceilMs(o.Delay), TTLMs: ceilMs(o.TTL), Group: o.Group}
	if !o.DeliverAt.IsZero() {
		m.DeliverAt = o.DeliverAt.UnixMilli()
	}
	return m
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
	// Ack lists receipts of leases the caller holds (at most 100),
	// acknowledged in the same call before anything is taken, all or none:
	// a consumer that acks each message as it asks for the next saves a
	// call per message. An unknown or lapsed one is an *Error with status
	// 409 naming it, and then nothing is acknowledged or taken.
	Ack []string
}

// receiveRequest is the body of POST /api/v1/queues/{queue}/receive.
type receiveRequest struct {
	From         string   `json:"from,omitempty"`
	AckTimeoutMs int64    `json:"ack_timeout_ms,omitempty"`
	WaitMs       int64    `json:"wait_ms,omitempty"`
	Max          *int     `json:"max,omitempty"`
	Ack          []string `json:"ack,omitempty"`
}

// receiveRequestOf is the body of a receive of up to *max messages (nil:
// one, answered as a message rather than a list).
func receiveRequestOf(opts ReceiveOptions, max *int) receiveRequest {
	return receiveRequest{From: opts.From, AckTimeoutMs: ceilMs(opts.AckTimeout), WaitMs: ceilMs(opts.Wait), Max: max, Ack: opts.Ack}
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

// Send appends body to a queue, for anyone or for opts.To, with the
// options of opts.
func (c *Client) Send(ctx context.Context, queue, body string, opts SendOptions) (SendResult, error) {
	var r SendResult
	_, err := c.sendJSON(ctx, http.MethodPost, queuePath(queue, "/messages"), messageInOf(body, opts), &r)
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
	status, err := c.sendJSON(withAttemptExtra(ctx, opts.Wait), http.MethodPost, queuePath(queue, "/receive"), receiveRequestOf(opts, nil), &msg)
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

package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// QueueSettings changes a queue's settings: nil fields keep their value
// (at creation, the defaults: max_deliveries 20, no dead-letter queue, no
// TTL, no max length, overflow "reject").
type QueueSettings struct {
	MaxDeliveries *uint64 `json:"max_deliveries,omitempty"`
	DeadLetter    *string `json:"dead_letter,omitempty"`
	TTLMs         *int64  `json:"ttl_ms,omitempty"`
	MaxLength     *uint64 `json:"max_length,omitempty"`
	Overflow      *string `json:"overflow,omitempty"`
}

// QueueConfig is a queue's settings as ConfigureQueue answers them.
type QueueConfig struct {
	MaxDeliveries uint64 `json:"max_deliveries"`
	DeadLetter    string `json:"dead_letter,omitempty"`
	TTLMs         int64  `json:"ttl_ms,omitempty"`
	MaxLength     uint64 `json:"max_length,omitempty"`
	Overflow      string `json:"overflow"`
}

// CreateQueueWith creates a queue owned by the caller with settings; 409
// when it exists, 400 naming a bad setting (a dead-letter queue that does
// not exist, say).
func (c *Client) CreateQueueWith(ctx context.Context, name string, settings QueueSettings) (Queue, error) {
	in := struct {
		Name string `json:"name"`
		QueueSettings
	}{name, settings}
	var q Queue
	_, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/queues", in, &q)
	return q, err
}

// GetQueue returns a queue with its settings and stats.
func (c *Client) GetQueue(ctx context.Context, name string) (Queue, error) {
	var q Queue
	_, err := c.getJSON(ctx, queuePath(name, ""), nil, &q)
	return q, err
}

// ConfigureQueue changes the settings given in settings (its creator or an
// admin may) and returns them all.
func (c *Client) ConfigureQueue(ctx context.Context, name string, settings QueueSettings) (QueueConfig, error) {
	var out QueueConfig
	_, err := c.sendJSON(ctx, http.MethodPatch, queuePath(name, ""), settings, &out)
	return out, err
}

// BatchMessage is one message of SendBatch.
type BatchMessage struct {
	Body string
	SendOptions
}

// SendBatch sends up to 100 messages at once, all or none, and returns
// their ids in order and the time of the send.
func (c *Client) SendBatch(ctx context.Context, queue string, msgs []BatchMessage) (ids []uint64, ts int64, err error) {
	in := struct {
		Messages []messageIn `json:"messages"`
	}{make([]messageIn, len(msgs))}
	for i, m := range msgs {
		in.Messages[i] = messageInOf(m.Body, m.SendOptions)
	}
	var out struct {
		IDs []uint64 `json:"ids"`
		Ts  int64    `json:"ts"`
	}
	_, err = c.sendJSON(ctx, http.MethodPost, queuePath(queue, "/messages/batch"), in, &out)
	return out.IDs, out.Ts, err
}

// ReceiveMany takes up to max (1 to 100) messages at once, in the order
// Receive would take them; none when none came within opts.Wait.
func (c *Client) ReceiveMany(ctx context.Context, queue string, max int, opts ReceiveOptions) ([]QueueMessage, error) {
	in := receiveRequestOf(opts, &max)
	var out struct {
		Messages []QueueMessage `json:"messages"`
	}
	_, err := c.sendJSON(withAttemptExtra(ctx, opts.Wait), http.MethodPost, queuePath(queue, "/receive"), in, &out)
	return out.Messages, err
}

// NackOptions qualify Nack.
type NackOptions struct {
	// Delay returns the message after this long instead of at once.
	Delay time.Duration
	// Reason is kept with the message and shown on its dead letter.
	Reason string
	// Dead dead-letters the message now.
	Dead bool
}

// Nack gives a leased message back: to the queue (after opts.Delay), or to
// the dead-letter queue with opts.Dead. A message leased max_deliveries
// times is dead-lettered. 409 as for Ack.
func (c *Client) Nack(ctx context.Context, queue, receipt string, opts NackOptions) error {
	in := struct {
		Receipt string `json:"receipt"`
		DelayMs int64  `json:"delay_ms,omitempty"`
		Reason  string `json:"reason,omitempty"`
		Dead    bool   `json:"dead,omitempty"`
	}{receipt, ceilMs(opts.Delay), opts.Reason, opts.Dead}
	_, err := c.sendJSON(ctx, http.MethodPost, queuePath(queue, "/nack"), in, nil)
	return err
}

// Extend makes a lease last ackTimeout from now and returns its new
// expiry (Unix ms). A lapsed lease is an *Error with status 409.
func (c *Client) Extend(ctx context.Context, queue, receipt string, ackTimeout time.Duration) (int64, error) {
	in := struct {
		Receipt      string `json:"receipt"`
		AckTimeoutMs int64  `json:"ack_timeout_ms"`
	}{receipt, ceilMs(ackTimeout)}
	var out struct {
		LeaseExpiresAt int64 `json:"lease_expires_at"`
	}
	_, err := c.sendJSON(ctx, http.MethodPost, queuePath(queue, "/extend"), in, &out)
	return out.LeaseExpiresAt, err
}

// Purge removes every message of a queue (its creator or an admin may) and
// returns how many there were.
func (c *Client) Purge(ctx context.Context, queue string) (uint64, error) {
	var out struct {
		Purged uint64 `json:"purged"`
	}
	_, err := c.sendJSON(ctx, http.MethodPost, queuePath(queue, "/purge"), struct{}{}, &out)
	return out.Purged, err
}

// Redrive moves up to max (0: 100) dead letters of a queue back to the
// queues they came from, or to to when not "", and reports how many it
// moved and whether more remain.
func (c *Client) Redrive(ctx context.Context, queue string, max int, to string) (moved uint64, more bool, err error) {
	in := struct {
		Max int    `json:"max,omitempty"`
		To  string `json:"to,omitempty"`
	}{max, to}
	var out struct {
		Moved uint64 `json:"moved"`
		More  bool   `json:"more"`
	}
	_, err = c.sendJSON(ctx, http.MethodPost, queuePath(queue, "/redrive"), in, &out)
	return out.Moved, out.More, err
}

// Browse lists up to limit (0: 50) messages of a queue with ids above
// after, without taking them: all of them for its creator and admins,
// else those the caller may receive.
func (c *Client) Browse(ctx context.Context, queue string, after uint64, limit int) ([]QueueMessage, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatUint(after, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Messages []QueueMessage `json:"messages"`
	}
	_, err := c.getJSON(ctx, queuePath(queue, "/messages"), q, &out)
	return out.Messages, err
}

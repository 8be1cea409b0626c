package api

import (
	"context"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/queue"
)

// A stream consumer's messages are leased for its ack timeout, but not in
// one piece: the node serving the stream leases each for at most
// Config.ConsumerLease at a time and renews the lease while the consumer
// runs, until the message is acknowledged or its ack timeout is reached.
// A consumer that ends returns its messages at once (finish); one whose
// node dies can neither return nor renew them, and they come back when the
// current lease lapses — within ConsumerLease, as RabbitMQ returns the
// deliveries of a consumer whose node went down, instead of after the
// whole ack timeout. A consumer that acknowledges within ConsumerLease / 2
// costs no renewal at all.

// DefaultConsumerLease is Config.ConsumerLease's default.
const DefaultConsumerLease = 10 * time.Second

// heldLease is a message a consumer delivered and nobody acknowledged: by
// this node's clock, when its current lease ends and when its ack timeout
// does, past which it is not renewed. They count from when the receive that
// leased it returned (an extension: from before it was proposed), up to a
// commit's latency after the leader's stamp; renewing half a lease before
// the end absorbs that.
type heldLease struct {
	expires, deadline time.Time
}

// deadlineMs returns the ack deadline of a message a receive leased for
// c.lease (Unix ms, the leader's clock): the lease's end moved out to the
// consumer's whole ack timeout. The delivery names it as the lease's end.
func (c *queueConsumer) deadlineMs(m queue.Message) int64 {
	return m.LeaseExpiresMs - c.lease.Milliseconds() + c.ackTimeout.Milliseconds()
}

// renewer renews, until ctx ends, the leases of consumer c's messages that
// would lapse before their ack deadline; it runs only for a consumer whose
// ack timeout is longer than its lease.
func (qs *queueStreams) renewer(ctx context.Context, c *queueConsumer) {
	t := time.NewTicker(c.lease / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		qs.renewDue(ctx, c)
	}
}

// renewDue extends, up to acksInFlight at once, each lease of c that ends
// within half a lease and before its deadline, to a lease from now (or to
// the deadline, when nearer). A refused extension (the lease lapsed, or the
// message was acknowledged meanwhile) is not tried again; one that failed
// otherwise is, at the next tick.
func (qs *queueStreams) renewDue(ctx context.Context, c *queueConsumer) {
	now := time.Now()
	var due []string
	c.mu.Lock()
	for r, h := range c.held {
		if h.expires.Before(h.deadline) && h.expires.Sub(now) < c.lease/2 {
			due = append(due, r)
		}
	}
	c.mu.Unlock()
	eachAtMost(acksInFlight, due, func(r string) {
		c.mu.Lock()
		h, ok := c.held[r]
		c.mu.Unlock()
		if !ok {
			return // acknowledged meanwhile
		}
		start := time.Now()
		until := min(h.deadline.Sub(start), c.lease)
		if until < time.Millisecond {
			return // at its deadline
		}
		_, err := qs.s.queues.Extend(ctx, qs.id.User, c.queue, r, until, "")
		c.mu.Lock()
		defer c.mu.Unlock()
		h, ok = c.held[r]
		switch {
		case !ok:
			return
		case err == nil:
			h.expires = start.Add(until)
		case errs.CodeOf(err) == errs.Conflict:
			h.deadline = h.expires // lapsed: delivered again, or soon
		default:
			return // tried again at the next tick
		}
		c.held[r] = h
	})
}

// eachAtMost calls fn for every item, at most n at once, and returns once
// all calls returned.
func eachAtMost(n int, items []string, fn func(string)) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, n)
	for _, it := range items {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			fn(it)
		})
	}
	wg.Wait()
}

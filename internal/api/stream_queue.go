package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/ratelimit"
	"github.com/parley-chat/parley/internal/stream"
)

// queueStreams are one stream connection's queue consumers, by id, and its
// sender. Each consumer runs on its own goroutine until unsubscribed,
// replaced, failed or the connection ends: it takes messages for its user
// under a lease, as many as its prefetch allows beside those delivered and
// not yet acknowledged, and queues them on the connection's subscriber as
// queue_message frames. The sender sends the connection's send frames one
// after the other and answers each (internal/queue/DESIGN.md, "Consumers
// and senders on live streams").
//
// An ack frame that arrives while the consumer waits for credit rides on
// the consumer's next receive (one Raft entry acknowledges and takes, as
// POST …/receive {ack} does); one that arrives while a receive is under way
// goes out on its own (Ack per receipt). When a consumer ends, the
// messages it delivered and nobody acknowledged go back to the queue at
// once (nack), as RabbitMQ requeues a closed channel's unacknowledged
// deliveries, those its last receive took included (the end stops a long
// poll's wait, never a receive under way). While it runs, its renewer keeps
// the leases of the messages it holds short and renewed
// (stream_queue_lease.go), so that they come back soon if this node dies.
type queueStreams struct {
	s   *Server
	ctx context.Context
	sub *stream.Subscriber
	id  Identity

	mu        sync.Mutex
	consumers map[string]*queueConsumer
	wg        sync.WaitGroup

	// sends are the connection's send frames, in order, for its sender
	// goroutine (started by the first); stopSender ends it.
	sends      chan sendJob
	stopSender context.CancelFunc
}

// queueConsumer is one running consumer of a connection.
type queueConsumer struct {
	key        string // the consumer's id in frames
	queue      string
	from       string
	prefetch   int
	ackTimeout time.Duration // each message's, as the consumer asked
	lease      time.Duration // each lease the node takes: ackTimeout, at most ConsumerLease; renewed up to ackTimeout (stream_queue_lease.go)
	cancel     context.CancelFunc
	wake       chan struct{} // capacity 1: the loop has credit or acks again
	ackWake    chan struct{} // capacity 1: receipts to acknowledge on their own

	mu    sync.Mutex
	held  map[string]heldLease // receipts delivered and not acknowledged
	acks  []string             // acknowledged while the loop waited: its next receive carries them
	alone []string             // acknowledged while a receive was under way: acked on their own
	idle  bool                 // the loop waits for credit
}

// consumerEndWait bounds the acks and returns a consumer makes as it ends.
const consumerEndWait = 5 * time.Second

// defaultConsumerAckTimeout is a consumer's ack timeout when its subscribe
// names none: a consumer always leases, and its messages wait for acks.
const defaultConsumerAckTimeout = 30 * time.Second

// receiveGrace bounds a consumer's receive beyond its long poll's wait.
const receiveGrace = 30 * time.Second

func (s *Server) newQueueStreams(ctx context.Context, sub *stream.Subscriber, id Identity) *queueStreams {
	return &queueStreams{s: s, ctx: ctx, sub: sub, id: id, consumers: map[string]*queueConsumer{}}
}

// subscribe starts consumer q, replacing one of the same id.
func (qs *queueStreams) subscribe(q stream.QueueConsumer) {
	key := q.Key()
	if maxMs := qs.s.queues.Limits().MaxAckTimeout.Milliseconds(); q.AckTimeoutMs > maxMs {
		qs.sub.Send(stream.QueueErrorFrameFor(key, errs.New(errs.Invalid, "ack_timeout_ms must be between 0 and %d", maxMs)))
		return
	}
	prefetch := max(q.Prefetch, 1)
	qs.mu.Lock()
	defer qs.mu.Unlock()
	old := qs.consumers[key]
	if old == nil && len(qs.consumers) >= stream.MaxQueueConsumers {
		qs.sub.Send(stream.QueueErrorFrameFor(key, errs.New(errs.Invalid, "at most %d queue consumers per connection", stream.MaxQueueConsumers)))
		return
	}
	// The messages a connection's consumers hold fit its frame queue,
	// whatever their size and however slowly the client reads.
	held := prefetch
	for k, c := range qs.consumers {
		if k != key {
			held += c.prefetch
		}
	}
	if held > stream.MaxPrefetch {
		qs.sub.Send(stream.QueueErrorFrameFor(key, errs.New(errs.Invalid, "the consumers of one connection prefetch at most %d messages in all; this one would make %d", stream.MaxPrefetch, held)))
		return
	}
	if old != nil {
		old.cancel()
	}
	ctx, cancel := context.WithCancel(qs.ctx)
	ackTimeout := cmp.Or(time.Duration(q.AckTimeoutMs)*time.Millisecond, defaultConsumerAckTimeout)
	c := &queueConsumer{
		key: key, queue: q.Name, from: q.From, prefetch: prefetch,
		ackTimeout: ackTimeout, lease: min(ackTimeout, qs.s.consumerLeaseMax),
		cancel: cancel, wake: make(chan struct{}, 1), ackWake: make(chan struct{}, 1), held: map[string]heldLease{},
	}
	qs.consumers[key] = c
	qs.wg.Go(func() {
		defer qs.forget(c)
		var helpers sync.WaitGroup
		helpers.Go(func() { qs.acker(ctx, c) })
		if c.lease < c.ackTimeout {
			helpers.Go(func() { qs.renewer(ctx, c) })
		}
		qs.run(ctx, c)
		c.cancel()
		helpers.Wait()
		qs.finish(c)
	})
}

// streamQueueFrame applies a client's queue frame: a consumer's subscribe
// (allowed by the token's scopes: write on the queue, as POST …/receive
// needs; the token checked again first), unsubscribe or ack, or a send.
func (s *Server) streamQueueFrame(ctx context.Context, qs *queueStreams, f stream.ClientFrame, id Identity, token string) {
	key := f.Queue.Key()
	switch f.Type {
	case stream.TypeSubscribe:
		errorFrame := func(err error) []byte { return stream.QueueErrorFrameFor(key, err) }
		if s.queues == nil {
			qs.sub.Send(errorFrame(errs.New(errs.NotFound, "queues are not served here")))
			return
		}
		if err := permit(id, account.LevelWrite, account.KindQueue, f.Queue.Name, "queue "+f.Queue.Name); err != nil {
			qs.sub.Send(errorFrame(err))
			return
		}
		if s.recheckToken(ctx, qs.sub, token, "queue "+f.Queue.Name, errorFrame) {
			qs.subscribe(*f.Queue)
		}
	case stream.TypeUnsubscribe:
		qs.unsubscribe(key)
	case stream.TypeAck:
		qs.ack(key, f.Receipts)
	case stream.TypeSend:
		s.streamSend(ctx, qs, f, id)
	}
}

// forget drops consumer c once it ended, unless a new one took its place.
func (qs *queueStreams) forget(c *queueConsumer) {
	c.cancel()
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.consumers[c.key] == c {
		delete(qs.consumers, c.key)
	}
}

// unsubscribe ends consumer key.
func (qs *queueStreams) unsubscribe(key string) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if c := qs.consumers[key]; c != nil {
		c.cancel()
		delete(qs.consumers, key)
	}
}

// ack takes an ack frame for consumer key.
func (qs *queueStreams) ack(key string, receipts []string) {
	qs.mu.Lock()
	c := qs.consumers[key]
	qs.mu.Unlock()
	if c == nil {
		qs.sub.Send(stream.QueueErrorFrameFor(key, errs.New(errs.NotFound, "no queue consumer %q on this connection", key)))
		return
	}
	c.mu.Lock()
	for _, r := range receipts {
		delete(c.held, r)
	}
	idle := c.idle
	if idle {
		c.acks = append(c.acks, receipts...)
	} else {
		c.alone = append(c.alone, receipts...)
	}
	c.mu.Unlock()
	if idle {
		signal(c.wake)
	} else {
		signal(c.ackWake)
	}
}

// close ends every consumer and the sender, and waits for them (and the
// consumers' returns).
func (qs *queueStreams) close() {
	qs.mu.Lock()
	for key, c := range qs.consumers {
		c.cancel()
		delete(qs.consumers, key)
	}
	if qs.stopSender != nil {
		qs.stopSender()
	}
	qs.mu.Unlock()
	qs.wg.Wait()
}

// signal wakes whoever waits on ch (capacity 1).
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run is consumer c's loop: it holds one of the user's long-poll slots for
// its lifetime, says it runs once its first receive succeeded, then takes
// and delivers messages until ctx ends or a receive fails for good.
func (qs *queueStreams) run(ctx context.Context, c *queueConsumer) {
	release, err := qs.s.hold(ctx, ratelimit.LongPolls, qs.id.User)
	if err != nil {
		qs.sub.Send(stream.QueueErrorFrameFor(c.key, err))
		return
	}
	defer release()
	// The first receive waits for nothing: it proves the queue is there
	// and the user may take from it before the consumer says it runs.
	ready, wait := false, time.Duration(0)
	for ctx.Err() == nil {
		acks, credit := c.next()
		if credit <= 0 {
			c.ackAlone(acks) // receipts it does not hold: no credit comes of them
			if !await(ctx, c.wake) {
				return
			}
			continue
		}
		// The consumer's end stops a long poll's wait, never a receive under
		// way: what it takes is held, and returned as the consumer ends.
		o := queue.ReceiveOptions{From: c.from, AckTimeout: c.lease, Wait: wait, Max: credit, Ack: acks, StopWaiting: ctx.Done()}
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), wait+receiveGrace)
		msgs, err := qs.s.queues.ReceiveMany(rctx, qs.id.User, c.queue, o, "")
		rcancel()
		received := time.Now()
		code := errs.CodeOf(err)
		switch {
		case err == nil:
			if !ready {
				ready, wait = true, qs.s.queues.Limits().MaxWait
				if !qs.sub.Send(stream.EncodeQueueReady(c.key)) {
					c.hold(msgs, received) // returned as the consumer ends
					return
				}
			}
			if !qs.deliver(c, msgs, received) {
				return
			}
		case ctx.Err() != nil:
			c.ackAlone(acks) // applied or not: the consumer's end tries them once more
			return
		case len(acks) > 0 && (code == errs.Conflict || code == errs.Invalid):
			// A receipt was refused, and the receive, all or none, took
			// nothing: the acks go on their own, each reporting its failure.
			c.ackAlone(acks)
		case code == errs.Unavailable || code == errs.Timeout:
			c.ackAlone(acks)
			select { // the partition has no leader yet, or it moves: soon again
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		default:
			if code == errs.Internal {
				qs.s.log.Error("queue consumer failed", "queue", c.queue, "err", err)
			}
			qs.sub.Send(stream.QueueErrorFrameFor(c.key, err))
			return
		}
	}
}

// next returns the acks for the next receive and the consumer's credit;
// with no credit it marks the loop idle, so acks wait for its next receive.
func (c *queueConsumer) next() (acks []string, credit int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	acks, c.acks = c.acks, nil
	credit = min(c.prefetch-len(c.held), queue.MaxBatch)
	c.idle = credit <= 0
	return acks, credit
}

// await waits for a signal on ch; false when ctx ended.
func await(ctx context.Context, ch chan struct{}) bool {
	select {
	case <-ctx.Done():
		return false
	case <-ch:
		return true
	}
}

// ackAlone hands acks to the consumer's acker, to go on their own.
func (c *queueConsumer) ackAlone(acks []string) {
	if len(acks) == 0 {
		return
	}
	c.mu.Lock()
	c.alone = append(c.alone, acks...)
	c.mu.Unlock()
	signal(c.ackWake)
}

// acker acknowledges, as they come, the receipts that arrived while a
// receive was under way (a long poll may last seconds, longer than a
// lease) or that a receive could not apply, until ctx ends.
func (qs *queueStreams) acker(ctx context.Context, c *queueConsumer) {
	for await(ctx, c.ackWake) {
		qs.ackEach(ctx, c)
	}
}

// ackEach acknowledges the consumer's receipts to go on their own, up to
// acksInFlight at once (they share Raft rounds), and returns once all are
// done; a refused one is reported as the consumer's error frame, and the
// consumer goes on.
func (qs *queueStreams) ackEach(ctx context.Context, c *queueConsumer) {
	c.mu.Lock()
	alone := c.alone
	c.alone = nil
	c.mu.Unlock()
	eachAtMost(acksInFlight, alone, func(r string) {
		if err := qs.s.queues.Ack(ctx, qs.id.User, c.queue, r, ""); err != nil && ctx.Err() == nil {
			qs.sub.Send(stream.QueueErrorFrameFor(c.key, err))
		}
	})
}

// acksInFlight bounds the acks one consumer has under way on their own.
const acksInFlight = 16

// deliver counts msgs held (received: when their receive returned) and
// queues them as the consumer's frames; false when the connection takes no
// more frames.
func (qs *queueStreams) deliver(c *queueConsumer, msgs []queue.Message, received time.Time) bool {
	c.hold(msgs, received)
	for _, m := range msgs {
		m.LeaseExpiresMs = c.deadlineMs(m) // the consumer's deadline, not the node's lease
		b, err := json.Marshal(messageOf(m))
		if err != nil {
			qs.s.log.Error("queue consumer: encode message", "queue", c.queue, "err", err)
			return false
		}
		if !qs.sub.Send(stream.EncodeQueueMessage(c.key, b)) {
			return false
		}
	}
	return true
}

// hold counts msgs delivered and not acknowledged; received is when the
// receive that leased them returned.
func (c *queueConsumer) hold(msgs []queue.Message, received time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		c.held[m.Receipt] = heldLease{expires: received.Add(c.lease), deadline: received.Add(c.ackTimeout)}
	}
}

// finish runs once consumer c's loop and acker ended: the acks it still
// holds go out, then the messages it delivered and nobody acknowledged go
// back to the queue.
func (qs *queueStreams) finish(c *queueConsumer) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(qs.ctx), consumerEndWait)
	defer cancel()
	c.mu.Lock()
	c.alone = append(c.alone, c.acks...)
	c.acks = nil
	c.mu.Unlock()
	qs.ackEach(ctx, c)
	c.mu.Lock()
	held := make([]string, 0, len(c.held))
	for r := range c.held {
		held = append(held, r)
	}
	clear(c.held)
	c.mu.Unlock()
	for _, r := range held {
		err := qs.s.queues.Nack(ctx, qs.id.User, c.queue, r, queue.NackOptions{Reason: "consumer ended"}, "")
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && errs.CodeOf(err) == errs.Internal {
			qs.s.log.Error("queue consumer: return a message", "queue", c.queue, "err", err)
		}
	}
}

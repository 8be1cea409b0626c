package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/client"
)

// QueueDelayOptions shape the delayed delivery accuracy measurement.
type QueueDelayOptions struct {
	// Clients are one client per target node, signed in; the sender uses
	// Clients[0], consumer w Clients[w % len(Clients)].
	Clients []*client.Client
	// Messages is how many delayed messages are sent.
	Messages int
	// Delay is how far ahead of its send each message is due.
	Delay time.Duration
	// Rate is how many messages are sent per second.
	Rate int
	// Consumers is how many consumers long-poll the queue.
	Consumers int
	// QueuePrefix starts the queue's name; a random run id follows.
	QueuePrefix string
}

// QueueDelayResult is how far from its due time each delayed message was
// received.
type QueueDelayResult struct {
	Queue    string
	Sent     int
	Received int
	// Late is how long after its due time each message was received
	// (messages received early count as 0 here and in Early).
	Late Latency
	// Early counts messages received before their due time, and
	// EarliestMs is the most any was early by (0 when none was).
	Early      int
	EarliestMs float64
	// Duplicates counts messages received more than once.
	Duplicates int
}

// RunQueueDelay sends Messages messages, each due Delay after its send
// (an absolute deliver_at, so the due time is known to the millisecond),
// at Rate per second, while Consumers receive and ack them, and measures
// how late each one arrived. It returns once every message was received,
// or fails when one is missing a minute after the last was due.
func RunQueueDelay(ctx context.Context, o QueueDelayOptions) (*QueueDelayResult, error) {
	switch {
	case len(o.Clients) == 0:
		return nil, errors.New("queue delay: no servers")
	case o.Messages < 1 || o.Rate < 1 || o.Consumers < 1:
		return nil, fmt.Errorf("queue delay: messages %d, rate %d, consumers %d: want at least 1 each", o.Messages, o.Rate, o.Consumers)
	case o.Delay < time.Millisecond:
		return nil, fmt.Errorf("queue delay: delay %v: want at least 1ms", o.Delay)
	}
	name := o.QueuePrefix + RunID() + "-delay"
	if _, err := o.Clients[0].CreateQueue(ctx, name); err != nil {
		return nil, fmt.Errorf("create queue %s: %w", name, err)
	}
	t := &delayTally{res: &QueueDelayResult{Queue: name}, seen: make(map[string]bool, o.Messages)}
	t.lastDue.Store(time.Now().Add(o.Delay).UnixMilli())
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for w := range o.Consumers {
		cl := o.Clients[w%len(o.Clients)]
		wg.Go(func() { t.consume(cctx, stop, cl, name, o.Messages) })
	}
	sendErr := t.send(ctx, o, name)
	if sendErr != nil {
		stop()
	}
	wg.Wait()
	res := t.res
	res.Received = int(t.received.Load())
	res.Late = summarize(&t.late)
	switch {
	case sendErr != nil:
		return res, sendErr
	case res.Received < res.Sent:
		return res, fmt.Errorf("%d of %d delayed messages not received within a minute of their due time", res.Sent-res.Received, res.Sent)
	}
	return res, nil
}

// delayTally is what the consumers of a queue-delay run saw.
type delayTally struct {
	mu       sync.Mutex // guards late, seen and res's counts
	late     Histogram
	seen     map[string]bool
	res      *QueueDelayResult
	received atomic.Int64
	lastDue  atomic.Int64 // Unix ms of the latest due time sent
}

// consume receives, records and acks delayed messages until messages were
// received, ctx ends, or nothing came for a minute past the last due time
// (then it stops the run).
func (t *delayTally) consume(ctx context.Context, stop func(), cl *client.Client, name string, messages int) {
	for ctx.Err() == nil && int(t.received.Load()) < messages {
		msg, found, err := cl.Receive(ctx, name, client.ReceiveOptions{Wait: 5 * time.Second, AckTimeout: time.Minute})
		if err != nil || !found {
			if time.Now().UnixMilli() > t.lastDue.Load()+time.Minute.Milliseconds() {
				stop()
			}
			continue
		}
		t.record(msg.Body, time.Now())
		_ = cl.Ack(ctx, name, msg.Receipt)
	}
}

// record counts a message received at at: its body starts with its due
// time in Unix ms.
func (t *delayTally) record(body string, at time.Time) {
	dueMs, _, _ := strings.Cut(body, ".")
	due, _ := strconv.ParseInt(dueMs, 10, 64)
	diff := at.Sub(time.UnixMilli(due))
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen[body] {
		t.res.Duplicates++
		return
	}
	t.seen[body] = true
	t.received.Add(1)
	if diff < 0 {
		t.res.Early++
		t.res.EarliestMs = max(t.res.EarliestMs, ms(-diff))
		diff = 0
	}
	t.late.Record(diff)
}

// send sends o.Messages delayed messages at o.Rate, each due o.Delay after
// it is sent, retrying each under its idempotency key.
func (t *delayTally) send(ctx context.Context, o QueueDelayOptions, name string) error {
	tick := time.NewTicker(time.Second / time.Duration(o.Rate))
	defer tick.Stop()
	for i := 0; i < o.Messages; i++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		due := time.Now().Add(o.Delay).Truncate(time.Millisecond)
		// The body is the due time, unique per message: a retry of the
		// same send (its idempotency key) is applied once.
		body := strconv.FormatInt(due.UnixMilli(), 10) + "." + strconv.Itoa(i)
		key := name + "-" + strconv.Itoa(i)
		for attempt := 0; ; attempt++ {
			_, err := o.Clients[0].Send(client.WithIdempotencyKey(ctx, key), name, body, client.SendOptions{DeliverAt: due})
			if err == nil {
				t.mu.Lock()
				t.res.Sent++
				t.mu.Unlock()
				t.lastDue.Store(due.UnixMilli())
				break
			}
			if !client.IsRetryable(err) || attempt == 5 {
				return fmt.Errorf("send %d: %w", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

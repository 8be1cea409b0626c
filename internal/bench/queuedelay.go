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
	res := &QueueDelayResult{Queue: name}
	var (
		mu       sync.Mutex
		late     Histogram
		seen     = make(map[string]bool, o.Messages)
		received atomic.Int64
		lastDue  atomic.Int64 // Unix ms of the latest due time sent
	)
	lastDue.Store(time.Now().Add(o.Delay).UnixMilli())
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for w := range o.Consumers {
		cl := o.Clients[w%len(o.Clients)]
		wg.Go(func() {
			for cctx.Err() == nil && int(received.Load()) < o.Messages {
				msg, found, err := cl.Receive(cctx, name, client.ReceiveOptions{Wait: 5 * time.Second, AckTimeout: time.Minute})
				if err != nil || !found {
					if time.Now().UnixMilli() > lastDue.Load()+time.Minute.Milliseconds() {
						stop()
					}
					continue
				}
				at := time.Now()
				dueMs, _, _ := strings.Cut(msg.Body, ".")
				due, _ := strconv.ParseInt(dueMs, 10, 64)
				diff := at.Sub(time.UnixMilli(due))
				mu.Lock()
				if seen[msg.Body] {
					res.Duplicates++
				} else {
					seen[msg.Body] = true
					received.Add(1)
					if diff < 0 {
						res.Early++
						res.EarliestMs = max(res.EarliestMs, ms(-diff))
						diff = 0
					}
					late.Record(diff)
				}
				mu.Unlock()
				_ = cl.Ack(cctx, name, msg.Receipt)
			}
		})
	}
	tick := time.NewTicker(time.Second / time.Duration(o.Rate))
	defer tick.Stop()
	var sendErr error
	for i := 0; i < o.Messages && sendErr == nil; i++ {
		select {
		case <-ctx.Done():
			sendErr = ctx.Err()
			continue
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
				res.Sent++
				lastDue.Store(due.UnixMilli())
				break
			}
			if !client.IsRetryable(err) || attempt == 5 {
				sendErr = fmt.Errorf("send %d: %w", i, err)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if sendErr != nil {
		stop()
	}
	wg.Wait()
	res.Received = int(received.Load())
	res.Late = summarize(&late)
	switch {
	case sendErr != nil:
		return res, sendErr
	case res.Received < res.Sent:
		return res, fmt.Errorf("%d of %d delayed messages not received within a minute of their due time", res.Sent-res.Received, res.Sent)
	}
	return res, nil
}

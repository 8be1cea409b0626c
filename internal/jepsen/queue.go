package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/parley-chat/parley/client"
)

// Queue sends unique bodies to one queue and receives them with a lease,
// acking each, through random nodes; sends, receives and acks carry
// idempotency keys and are retried on other nodes. When stopped it drains
// the queue. Its checker wants every acknowledged send received and acked,
// none acked twice under two leases, none stored twice.
type Queue struct {
	runner        // the senders; its mutex guards the records
	recv   runner // the receivers
	nodes  []*client.Client
	queue  string

	sent    map[string]bool            // acknowledged sends
	unknown int                        // sends of unknown outcome
	ids     map[string]map[uint64]bool // body -> message ids received
	acks    map[string]map[string]bool // body -> receipts acknowledged
	settled map[string]bool            // body acked, or ack unknown then refused (it was applied)
}

// leaseFor is how long a received message stays leased.
const leaseFor = 3 * time.Second

// NewQueue creates queue name through nodes[0] and returns its workload.
func NewQueue(nodes []*client.Client, name string) (*Queue, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := nodes[0].CreateQueue(ctx, name); err != nil {
		return nil, fmt.Errorf("create queue %s: %w", name, err)
	}
	return &Queue{runner: newRunner(), recv: newRunner(), nodes: nodes, queue: name,
		sent: map[string]bool{}, ids: map[string]map[uint64]bool{}, acks: map[string]map[string]bool{}, settled: map[string]bool{}}, nil
}

// Name implements Workload.
func (w *Queue) Name() string { return "queue" }

// Start implements Workload: n senders and n receivers.
func (w *Queue) Start(n int) {
	w.run(n, w.send)
	w.recv.run(n, w.receive)
}

// send sends one unique body.
func (w *Queue) send(cl, i int, rng *rand.Rand) {
	body := fmt.Sprintf("%s s%d-%d", w.queue, cl, i)
	first := rng.IntN(len(w.nodes))
	outcome, _ := retry(func(ctx context.Context, attempt int) error {
		_, err := w.nodes[(first+attempt)%len(w.nodes)].Send(client.WithIdempotencyKey(ctx, body), w.queue, body, client.SendOptions{})
		return err
	})
	w.mu.Lock()
	w.ops++
	switch outcome {
	case Acked:
		w.sent[body] = true
	case Unknown:
		w.unknown++
	}
	w.mu.Unlock()
}

// receive takes one message under a lease and acks it.
func (w *Queue) receive(cl, i int, rng *rand.Rand) {
	key := fmt.Sprintf("%s r%d-%d", w.queue, cl, i)
	first := rng.IntN(len(w.nodes))
	var msg client.QueueMessage
	var found bool
	outcome, _ := retry(func(ctx context.Context, attempt int) error {
		var err error
		msg, found, err = w.nodes[(first+attempt)%len(w.nodes)].Receive(client.WithIdempotencyKey(ctx, key), w.queue, client.ReceiveOptions{AckTimeout: leaseFor})
		return err
	})
	w.count()
	if outcome != Acked || !found {
		time.Sleep(20 * time.Millisecond)
		return // a lease we did not learn of lapses; the message comes back
	}
	w.mu.Lock()
	if w.ids[msg.Body] == nil {
		w.ids[msg.Body] = map[uint64]bool{}
	}
	w.ids[msg.Body][msg.ID] = true
	w.mu.Unlock()
	w.ack(msg, first)
}

// ack acknowledges msg, retrying with an idempotency key; an ack whose
// first attempts were lost and whose retry finds the receipt gone (409)
// was applied.
func (w *Queue) ack(msg client.QueueMessage, first int) {
	uncertain := false
	outcome, err := retry(func(ctx context.Context, attempt int) error {
		err := w.nodes[(first+attempt)%len(w.nodes)].Ack(client.WithIdempotencyKey(ctx, "ack "+msg.Receipt), w.queue, msg.Receipt)
		if err != nil && retryable(err) {
			uncertain = true
		}
		return err
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ops++
	var ce *client.Error
	switch {
	case outcome == Acked:
		if w.acks[msg.Body] == nil {
			w.acks[msg.Body] = map[string]bool{}
		}
		w.acks[msg.Body][msg.Receipt] = true
		w.settled[msg.Body] = true
	case uncertain && errors.As(err, &ce) && ce.Status == 409:
		w.settled[msg.Body] = true
	}
}

// Stop implements Workload: it stops the senders, lets the receivers drain
// the queue (up to a minute after every node serves again) and stops them.
func (w *Queue) Stop() {
	w.runner.Stop()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && !w.empty() {
		time.Sleep(200 * time.Millisecond)
	}
	w.recv.Stop()
}

// empty reports whether the queue holds no message, leased ones included.
func (w *Queue) empty() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	qs, err := w.nodes[0].ListQueues(ctx, false)
	if err != nil {
		return false
	}
	for _, q := range qs {
		if q.Name == w.queue {
			return q.Messages == 0
		}
	}
	return false
}

// Check implements Workload.
func (w *Queue) Check(_ *client.Client, _ string, r *Result) error {
	r.Workload, r.Linearizable = w.Name(), "n/a"
	r.Ops, r.Acked, r.Unknown = w.ops, len(w.sent), w.unknown
	if !w.empty() {
		r.Detail += " the queue did not drain;"
	}
	for body := range w.sent {
		if !w.settled[body] {
			r.Lost++
		}
	}
	for body, receipts := range w.acks {
		if len(receipts) > 1 {
			r.Duplicated++ // delivered and acked under two leases
		}
		if len(w.ids[body]) > 1 {
			r.Duplicated++ // stored twice
		}
	}
	r.Detail += fmt.Sprintf(" %d bodies acked by receivers", len(w.settled))
	return nil
}

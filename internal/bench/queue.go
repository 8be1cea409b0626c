package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/client"
)

// QueueOptions shape the queue workload.
type QueueOptions struct {
	// Clients are one client per target node, signed in; consumer w uses
	// Clients[w % len(Clients)], producer p Clients[(p+1) % len(Clients)].
	Clients []*client.Client
	// Queues is the number of queues; consumer w and producer p use queue
	// w % Queues and p % Queues.
	Queues int
	// Producers is the number of producers (at least Queues).
	Producers int
	// Size is the length of every message body in characters.
	Size int
	// AckTimeout is the lease of a received message.
	AckTimeout time.Duration
	// Wait is how long a receive long-polls for a message before it counts
	// as failed.
	Wait time.Duration
	// QueuePrefix starts every queue name; a random run id follows.
	QueuePrefix string
	// DeadLettersPriorities turns on the queue features that cost the
	// state machine work: every queue gets a dead-letter queue (its name
	// and "-dlq") and a delivery limit of 5, and messages go out with
	// priorities 0 to 9 in turn.
	DeadLettersPriorities bool
	// AckOnReceive makes each consumer acknowledge a message with its next
	// receive (POST …/receive {ack}) instead of a call of its own: one call
	// and one Raft entry per message fewer. A consumer's last message
	// stays leased when the run ends.
	AckOnReceive bool
	// Stream makes each consumer a queue consumer on a live stream of its
	// own (prefetch 1, as RabbitMQ's consumers here): the server pushes
	// each message, leased, and the consumer acknowledges it with an ack
	// frame, which rides on the server's next receive for it. Each
	// producer sends over a stream of its own too, waiting for each send's
	// sent frame (as RabbitMQ's publishers here wait for each confirm). No
	// call per message at all; excludes AckOnReceive.
	Stream bool
	// Pool, when not nil, sends each call to the client of the server
	// leading its queue's partition (the caller's own client when the
	// pool does not know it).
	Pool *client.Pool
}

// Queue is the durable queue workload. Producers send messages; the
// measured workers are consumers, and one operation is one message
// through: a leased receive (ack_timeout_ms), then its ack. Producers are
// paced by the consumers: each queue holds a credit of two messages per
// consumer (three with AckOnReceive, where each consumer holds its last
// message until its next receive: two ready either way), and every ack
// lets its producers send one more, so the backlog stays small and the
// rate is that of messages through the queue.
type Queue struct {
	o         QueueOptions
	run       string
	names     []string
	body      string
	consumers []int            // consumers per queue, from Prepare
	held      []string         // per consumer with AckOnReceive: the receipt its next receive acknowledges
	streams   []*client.Stream // per consumer with Stream: its live stream, consuming its queue
	credit    []chan struct{}  // per queue: sends allowed
	sent      atomic.Int64
	sendErrs  atomic.Int64
	lastErr   atomic.Value // string: the latest send error
	stop      context.CancelFunc
	wg        sync.WaitGroup
}

// Compile-time checks that Queue is a workload that prepares.
var (
	_ Workload = (*Queue)(nil)
	_ Preparer = (*Queue)(nil)
)

// NewQueue checks o and returns the workload.
func NewQueue(o QueueOptions) (*Queue, error) {
	switch {
	case len(o.Clients) == 0:
		return nil, errors.New("queue workload: no servers")
	case o.Queues < 1:
		return nil, fmt.Errorf("queue workload: queues %d: want at least 1", o.Queues)
	case o.Producers < o.Queues:
		return nil, fmt.Errorf("queue workload: producers %d, queues %d: want a producer per queue at least", o.Producers, o.Queues)
	case o.Size < 1:
		return nil, fmt.Errorf("queue workload: size %d: want at least 1", o.Size)
	case o.AckTimeout < time.Millisecond || o.Wait < time.Millisecond:
		return nil, errors.New("queue workload: the ack timeout and the wait must be at least 1 ms")
	case o.Stream && o.AckOnReceive:
		return nil, errors.New("queue workload: stream consumers acknowledge with frames, not on receive")
	}
	run := RunID()
	names := make([]string, o.Queues)
	for i := range names {
		names[i] = o.QueuePrefix + run + "-" + strconv.Itoa(i)
	}
	return &Queue{o: o, run: run, names: names, body: Filler(o.Size)}, nil
}

// Name implements Workload.
func (q *Queue) Name() string { return "queue" }

// Queues returns the queue names.
func (q *Queue) Queues() []string { return q.names }

// Sent returns how many messages the producers sent and how many sends
// failed, with the latest failure ("" when none).
func (q *Queue) Sent() (sent, failed int64, last string) {
	last, _ = q.lastErr.Load().(string)
	return q.sent.Load(), q.sendErrs.Load(), last
}

// Prepare implements Preparer: it creates the queues and starts the
// producers, which run until Close. workers is the number of consumers.
func (q *Queue) Prepare(ctx context.Context, workers int) error {
	if workers < q.o.Queues {
		return fmt.Errorf("consumers %d, queues %d: want a consumer per queue at least", workers, q.o.Queues)
	}
	err := Parallel(ctx, len(q.names), workers, func(ctx context.Context, w, i int) error {
		cl := q.client(w, i)
		var set client.QueueSettings
		if q.o.DeadLettersPriorities {
			dlq, limit := q.names[i]+"-dlq", uint64(5)
			if _, err := cl.CreateQueue(ctx, dlq); err != nil {
				return fmt.Errorf("create queue %s: %w", dlq, err)
			}
			set = client.QueueSettings{DeadLetter: &dlq, MaxDeliveries: &limit}
		}
		if _, err := cl.CreateQueueWith(ctx, q.names[i], set); err != nil {
			return fmt.Errorf("create queue %s: %w", q.names[i], err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	q.consumers = make([]int, q.o.Queues)
	for w := range workers {
		q.consumers[w%q.o.Queues]++
	}
	q.held = make([]string, workers)
	// Two ready messages per consumer; with AckOnReceive one more, since
	// each consumer keeps the last message it took until its next receive,
	// and with Stream one more, the one the server pushed.
	perConsumer := 2
	if q.o.AckOnReceive || q.o.Stream {
		perConsumer = 3
	}
	if q.o.Stream {
		if err := q.openStreams(ctx, workers); err != nil {
			return err
		}
	}
	q.credit = make([]chan struct{}, q.o.Queues)
	for i, n := range q.consumers {
		q.credit[i] = make(chan struct{}, perConsumer*n+workers) // room for the credit and every ack
		for range perConsumer * n {
			q.credit[i] <- struct{}{}
		}
	}
	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	q.stop = stop
	for p := range q.o.Producers {
		q.wg.Go(func() { q.produce(pctx, p) })
	}
	return nil
}

// produce sends a message to queue p % Queues for every credit it takes,
// until ctx ends. A failed send gives its credit back and is retried with
// the same idempotency key.
func (q *Queue) produce(ctx context.Context, p int) {
	qi := p % q.o.Queues
	cl := q.client(p+1, qi)
	var st *client.Stream
	if q.o.Stream {
		var err error
		if st, err = cl.Stream(ctx, client.StreamOptions{}); err != nil {
			q.sendErrs.Add(1)
			q.lastErr.Store(OpError("open stream", err).Error())
			return
		}
		defer st.Close()
	}
	for n := 0; ; {
		select {
		case <-ctx.Done():
			return
		case <-q.credit[qi]:
		}
		key := q.run + "-p" + strconv.Itoa(p) + "-" + strconv.Itoa(n)
		var opts client.SendOptions
		if q.o.DeadLettersPriorities {
			opts.Priority = n % 10
		}
		var err error
		if st != nil {
			err = sendOnStream(ctx, st, q.names[qi], key, q.body, opts)
		} else {
			_, err = cl.Send(client.WithIdempotencyKey(ctx, key), q.names[qi], q.body, opts)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			q.sendErrs.Add(1)
			q.lastErr.Store(OpError("send", err).Error())
			q.credit[qi] <- struct{}{}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		q.sent.Add(1)
		n++
	}
}

// Op implements Workload: consumer worker takes a message from its queue
// under a lease and acknowledges it; then its queue's producers may send
// one more.
//
// With AckOnReceive the receive acknowledges the consumer's previous
// message instead, which then frees its credit.
func (q *Queue) Op(ctx context.Context, worker, i int) error {
	switch {
	case q.o.AckOnReceive:
		return q.opAckOnReceive(ctx, worker)
	case q.o.Stream:
		return q.opStream(ctx, worker)
	}
	qi := worker % q.o.Queues
	cl := q.client(worker, qi)
	msg, found, err := cl.Receive(ctx, q.names[qi], client.ReceiveOptions{AckTimeout: q.o.AckTimeout, Wait: q.o.Wait})
	if err != nil {
		return OpError("receive", err)
	}
	if !found {
		return fmt.Errorf("receive: no message within %s", q.o.Wait)
	}
	if err := cl.Ack(ctx, q.names[qi], msg.Receipt); err != nil {
		return OpError("ack", err)
	}
	q.credit[qi] <- struct{}{}
	return nil
}

// opAckOnReceive is Op with AckOnReceive. Whatever the receive's outcome,
// the previous receipt is spent: acknowledged, or refused (its lease is
// gone) or unknown (it lapses and the message comes again); its credit goes
// back either way, so the producers keep pace.
func (q *Queue) opAckOnReceive(ctx context.Context, worker int) error {
	qi := worker % q.o.Queues
	cl := q.client(worker, qi)
	o := client.ReceiveOptions{AckTimeout: q.o.AckTimeout, Wait: q.o.Wait}
	if r := q.held[worker]; r != "" {
		o.Ack = []string{r}
		q.held[worker] = ""
		defer func() { q.credit[qi] <- struct{}{} }()
	}
	msg, found, err := cl.Receive(ctx, q.names[qi], o)
	if err != nil {
		return OpError("receive", err)
	}
	if !found {
		return fmt.Errorf("receive: no message within %s", q.o.Wait)
	}
	q.held[worker] = msg.Receipt
	return nil
}

// sendOnStream sends body to queue over st with idempotency key id and
// waits for its answer. A stream that failed stays failed: the producer's
// next sends fail too, and the report counts them.
func sendOnStream(ctx context.Context, st *client.Stream, queue, id, body string, opts client.SendOptions) error {
	if err := st.SendQueue(ctx, queue, id, body, opts); err != nil {
		return err
	}
	for {
		f, err := st.Next(ctx)
		if err != nil {
			return err
		}
		if f.ID != id {
			continue
		}
		switch f.Type {
		case client.FrameSent:
			return nil
		case client.FrameError:
			return fmt.Errorf("send: %s: %s", f.Code, f.Message)
		}
	}
}

// openStreams opens each consumer's live stream and starts its queue
// consumer there (prefetch 1), on the server its client goes to.
func (q *Queue) openStreams(ctx context.Context, workers int) error {
	q.streams = make([]*client.Stream, workers)
	return Parallel(ctx, workers, workers, func(ctx context.Context, _, w int) error {
		qi := w % q.o.Queues
		st, err := q.client(w, qi).Stream(ctx, client.StreamOptions{})
		if err != nil {
			return fmt.Errorf("consumer %d: open stream: %w", w, err)
		}
		q.streams[w] = st
		if err := st.Consume(ctx, "c", q.names[qi], client.ConsumeOptions{Prefetch: 1, AckTimeout: q.o.AckTimeout}); err != nil {
			return fmt.Errorf("consumer %d: consume: %w", w, err)
		}
		return nil
	})
}

// opStream is Op with Stream: the next message the server pushes, then
// its ack frame, which frees its credit.
func (q *Queue) opStream(ctx context.Context, worker int) error {
	st := q.streams[worker]
	ctx, cancel := context.WithTimeout(ctx, q.o.Wait)
	defer cancel()
	for {
		f, err := st.Next(ctx)
		if err != nil {
			return OpError("stream", err)
		}
		switch f.Type {
		case client.FrameQueueMessage:
			if err := st.AckQueue(ctx, "c", f.Delivery.Receipt); err != nil {
				return OpError("ack", err)
			}
			q.credit[worker%q.o.Queues] <- struct{}{}
			return nil
		case client.FrameError:
			return fmt.Errorf("consumer: %s: %s", f.Code, f.Message)
		}
	}
}

// client is the client caller c (a consumer, or a producer's number plus
// one) uses for queue qi: the pool's pick, else its own.
func (q *Queue) client(c, qi int) *client.Client {
	cl := q.o.Clients[c%len(q.o.Clients)]
	if q.o.Pool != nil {
		return q.o.Pool.ForQueue(q.names[qi], cl)
	}
	return cl
}

// Close stops the producers and closes the consumers' streams.
func (q *Queue) Close() error {
	for _, st := range q.streams {
		if st != nil {
			_ = st.Close()
		}
	}
	q.streams = nil
	if q.stop != nil {
		q.stop()
	}
	q.wg.Wait()
	return nil
}

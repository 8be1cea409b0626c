package peers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/internal/bench"
	amqp "github.com/rabbitmq/amqp091-go"
)

// RabbitMQQueue is the queue workload against RabbitMQ quorum queues
// (x-queue-type=quorum: replicated with Raft on every node, durable):
// producers publish persistent messages with publisher confirms, waiting
// for each confirm as a Parley send waits for its commit, and the measured
// workers are consumers with manual acks. One operation is one message
// through: a delivery taken and acked. Producers are paced exactly as in
// Queue: two messages of credit per consumer, one more per ack. It exists
// to compare Parley's queues with RabbitMQ's on the same machine in the
// same run.
type RabbitMQQueue struct {
	o         bench.RabbitMQQueueOptions
	names     []string
	run       string
	body      []byte
	admin     *amqp.Connection // declares and deletes the queues
	consumers []*rmqPeer       // one per worker, from Prepare
	credit    []chan struct{}  // per queue: sends allowed
	sent      atomic.Int64
	sendErrs  atomic.Int64
	lastErr   atomic.Value // string: the latest send error
	stop      context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Compile-time checks that RabbitMQQueue is a workload that prepares.
var (
	_ bench.Workload = (*RabbitMQQueue)(nil)
	_ bench.Preparer = (*RabbitMQQueue)(nil)
)

// rmqDialTimeout bounds a TCP connect and the AMQP handshake.
const rmqDialTimeout = 5 * time.Second

// NewRabbitMQQueue checks o and returns the workload.
func NewRabbitMQQueue(o bench.RabbitMQQueueOptions) (*RabbitMQQueue, error) {
	switch {
	case len(o.URLs) == 0:
		return nil, errors.New("rabbitmq queue workload: no URLs")
	case o.Queues < 1:
		return nil, fmt.Errorf("rabbitmq queue workload: queues %d: want at least 1", o.Queues)
	case o.Producers < o.Queues:
		return nil, fmt.Errorf("rabbitmq queue workload: producers %d, queues %d: want a producer per queue at least", o.Producers, o.Queues)
	case o.Size < 1:
		return nil, fmt.Errorf("rabbitmq queue workload: size %d: want at least 1", o.Size)
	case o.Prefetch < 1:
		return nil, fmt.Errorf("rabbitmq queue workload: prefetch %d: want at least 1", o.Prefetch)
	case o.Wait < time.Millisecond:
		return nil, errors.New("rabbitmq queue workload: the wait must be at least 1 ms")
	}
	for _, u := range o.URLs {
		if _, err := amqp.ParseURI(u); err != nil {
			return nil, fmt.Errorf("rabbitmq queue workload: URL %q: %w", u, err)
		}
	}
	run := bench.RunID()
	names := make([]string, o.Queues)
	for i := range names {
		names[i] = o.QueuePrefix + run + "-" + strconv.Itoa(i)
	}
	return &RabbitMQQueue{o: o, run: run, names: names, body: []byte(bench.Filler(o.Size))}, nil
}

// Name implements bench.Workload.
func (r *RabbitMQQueue) Name() string { return "rabbitmq-queue" }

// Queues returns the queue names.
func (r *RabbitMQQueue) Queues() []string { return r.names }

// Sent returns how many messages the producers had confirmed and how many
// publishes failed, with the latest failure ("" when none).
func (r *RabbitMQQueue) Sent() (sent, failed int64, last string) {
	last, _ = r.lastErr.Load().(string)
	return r.sent.Load(), r.sendErrs.Load(), last
}

// Prepare implements bench.Preparer: it declares the quorum queues, connects a
// consumer per worker and starts the producers, which run until Close.
func (r *RabbitMQQueue) Prepare(ctx context.Context, workers int) error {
	if workers < r.o.Queues {
		return fmt.Errorf("consumers %d, queues %d: want a consumer per queue at least", workers, r.o.Queues)
	}
	var err error
	if r.admin, err = rmqDial(r.o.URLs[0]); err != nil {
		return err
	}
	ch, err := r.admin.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	for _, name := range r.names {
		// durable, not auto-deleted, not exclusive; quorum queues must be
		// durable and are replicated to every node of the cluster.
		if _, err := ch.QueueDeclare(name, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
			return fmt.Errorf("declare quorum queue %s: %w", name, err)
		}
	}
	_ = ch.Close()
	r.consumers = make([]*rmqPeer, workers)
	err = bench.Parallel(ctx, workers, 16, func(ctx context.Context, _, w int) error {
		c := &rmqPeer{url: r.o.URLs[w%len(r.o.URLs)], setup: r.consume(r.names[w%r.o.Queues])}
		r.consumers[w] = c
		return c.open()
	})
	if err != nil {
		return err
	}
	perQueue := make([]int, r.o.Queues)
	for w := range workers {
		perQueue[w%r.o.Queues]++
	}
	r.credit = make([]chan struct{}, r.o.Queues)
	for i, n := range perQueue {
		r.credit[i] = make(chan struct{}, 2*n+workers) // room for the credit and every ack
		for range 2 * n {
			r.credit[i] <- struct{}{}
		}
	}
	producers := make([]*rmqPeer, r.o.Producers)
	err = bench.Parallel(ctx, r.o.Producers, 16, func(ctx context.Context, _, p int) error {
		producers[p] = &rmqPeer{url: r.o.URLs[(p+1)%len(r.o.URLs)], setup: confirmMode}
		return producers[p].open()
	})
	if err != nil {
		for _, p := range producers {
			p.close()
		}
		return err
	}
	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stop = stop
	for p, pr := range producers {
		r.wg.Go(func() {
			defer pr.close()
			r.produce(pctx, p, pr)
		})
	}
	return nil
}

// consume returns the set-up of a consumer's channel: its prefetch, then a
// consumer with manual acks on queue.
func (r *RabbitMQQueue) consume(queue string) func(*amqp.Channel) (<-chan amqp.Delivery, error) {
	return func(ch *amqp.Channel) (<-chan amqp.Delivery, error) {
		if err := ch.Qos(r.o.Prefetch, 0, false); err != nil {
			return nil, fmt.Errorf("qos: %w", err)
		}
		d, err := ch.Consume(queue, "", false, false, false, false, nil)
		if err != nil {
			return nil, fmt.Errorf("consume %s: %w", queue, err)
		}
		return d, nil
	}
}

// confirmMode puts a producer's channel in publisher confirm mode.
func confirmMode(ch *amqp.Channel) (<-chan amqp.Delivery, error) {
	if err := ch.Confirm(false); err != nil {
		return nil, fmt.Errorf("confirm mode: %w", err)
	}
	return nil, nil
}

// produce publishes a persistent message to queue p % Queues for every
// credit it takes, waiting for the broker's confirm, until ctx ends. A
// failed publish gives its credit back and is retried on a reopened
// channel.
func (r *RabbitMQQueue) produce(ctx context.Context, p int, pr *rmqPeer) {
	qi := p % r.o.Queues
	for n := 0; ; {
		select {
		case <-ctx.Done():
			return
		case <-r.credit[qi]:
		}
		id := r.run + "-p" + strconv.Itoa(p) + "-" + strconv.Itoa(n)
		err := pr.publish(ctx, r.names[qi], id, r.body)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.sendErrs.Add(1)
			r.lastErr.Store(err.Error())
			r.credit[qi] <- struct{}{}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		r.sent.Add(1)
		n++
	}
}

// Op implements bench.Workload: consumer worker takes the next delivery from its
// queue and acks it; then its queue's producers may send one more.
func (r *RabbitMQQueue) Op(ctx context.Context, worker, i int) error {
	c := r.consumers[worker]
	_, deliveries, err := c.channel()
	if err != nil {
		return err
	}
	t := time.NewTimer(r.o.Wait)
	defer t.Stop()
	var d amqp.Delivery
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("receive: no message within %s", r.o.Wait)
	case m, ok := <-deliveries:
		if !ok {
			c.broken()
			return errors.New("receive: channel closed")
		}
		d = m
	}
	if err := d.Ack(false); err != nil {
		c.broken()
		return fmt.Errorf("ack: %w", err)
	}
	r.credit[worker%r.o.Queues] <- struct{}{}
	return nil
}

// Close stops the producers, closes the consumers (their unacked messages
// go back to the queues) and deletes the queues.
func (r *RabbitMQQueue) Close() error {
	r.closeOnce.Do(func() {
		if r.stop != nil {
			r.stop()
		}
		r.wg.Wait()
		for _, c := range r.consumers {
			if c != nil {
				c.close()
			}
		}
		if r.admin == nil {
			return
		}
		defer r.admin.Close()
		ch, err := r.admin.Channel()
		if err != nil {
			r.closeErr = fmt.Errorf("delete queues: %w", err)
			return
		}
		for _, name := range r.names {
			if _, err := ch.QueueDelete(name, false, false, false); err != nil {
				r.closeErr = fmt.Errorf("delete queue %s: %w", name, err)
				return
			}
		}
	})
	return r.closeErr
}

// rmqDial connects to url with a bounded dial.
func rmqDial(url string) (*amqp.Connection, error) {
	c, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(rmqDialTimeout), Properties: amqp.Table{"connection_name": "parley bench"}})
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", bench.RedactURL(url), err)
	}
	return c, nil
}

// rmqPeer is one client of the broker: its own connection and channel,
// reopened after a failure. Consumers keep their delivery stream.
type rmqPeer struct {
	url        string
	setup      func(*amqp.Channel) (<-chan amqp.Delivery, error)
	mu         sync.Mutex
	conn       *amqp.Connection
	ch         *amqp.Channel
	deliveries <-chan amqp.Delivery
}

// open connects and sets the channel up.
func (p *rmqPeer) open() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.openLocked()
}

// openLocked (re)opens the connection when it is closed and a channel on
// it.
func (p *rmqPeer) openLocked() error {
	if p.conn == nil || p.conn.IsClosed() {
		c, err := rmqDial(p.url)
		if err != nil {
			return err
		}
		p.conn = c
	}
	ch, err := p.conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	d, err := p.setup(ch)
	if err != nil {
		_ = ch.Close()
		return err
	}
	p.ch, p.deliveries = ch, d
	return nil
}

// channel returns the channel and its deliveries, reopening them after a
// failure.
func (p *rmqPeer) channel() (*amqp.Channel, <-chan amqp.Delivery, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch == nil || p.ch.IsClosed() {
		if err := p.openLocked(); err != nil {
			return nil, nil, fmt.Errorf("reconnect: %w", err)
		}
	}
	return p.ch, p.deliveries, nil
}

// broken drops the channel, so that the next use opens another.
func (p *rmqPeer) broken() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch != nil {
		_ = p.ch.Close()
		p.ch = nil
	}
}

// confirmGrace is how long a stopping producer still waits for the
// confirm of a publish in flight.
const confirmGrace = time.Second

// publish sends a persistent message to queue through the default
// exchange and waits for the broker's confirm.
func (p *rmqPeer) publish(ctx context.Context, queue, id string, body []byte) error {
	ch, _, err := p.channel()
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	msg := amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "text/plain", MessageId: id, Body: body}
	conf, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, false, false, msg)
	if err != nil {
		p.broken()
		return fmt.Errorf("publish: %w", err)
	}
	ok, err := conf.WaitContext(ctx)
	if err != nil && ctx.Err() != nil {
		// Stopping: the confirm may be on its way, even already behind a
		// delivery a consumer counted. Give it a moment so Sent counts
		// every message the broker took.
		t := time.NewTimer(confirmGrace)
		select {
		case <-conf.Done():
			ok, err = conf.Acked(), nil
		case <-t.C:
		}
		t.Stop()
	}
	switch {
	case err != nil:
		return fmt.Errorf("publish: waiting for the confirm: %w", err)
	case !ok:
		return errors.New("publish: the broker nacked the message")
	}
	return nil
}

// close closes the connection and with it the channel.
func (p *rmqPeer) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		_ = p.conn.Close()
	}
}

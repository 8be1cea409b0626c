package peers

import (
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/bench"
	amqp "github.com/rabbitmq/amqp091-go"
)

func TestNewRabbitMQQueue_Invalid(t *testing.T) {
	ok := bench.RabbitMQQueueOptions{URLs: []string{"amqp://guest:guest@127.0.0.1:5672/"}, Queues: 2, Producers: 2, Size: 10, Prefetch: 1, Wait: time.Second}
	if _, err := NewRabbitMQQueue(ok); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for name, change := range map[string]func(*bench.RabbitMQQueueOptions){
		"no urls":        func(o *bench.RabbitMQQueueOptions) { o.URLs = nil },
		"http url":       func(o *bench.RabbitMQQueueOptions) { o.URLs = []string{"http://127.0.0.1:5672"} },
		"no queues":      func(o *bench.RabbitMQQueueOptions) { o.Queues = 0 },
		"few producers":  func(o *bench.RabbitMQQueueOptions) { o.Producers = 1 },
		"empty messages": func(o *bench.RabbitMQQueueOptions) { o.Size = 0 },
		"no prefetch":    func(o *bench.RabbitMQQueueOptions) { o.Prefetch = 0 },
		"no wait":        func(o *bench.RabbitMQQueueOptions) { o.Wait = 0 },
	} {
		o := ok
		change(&o)
		if _, err := NewRabbitMQQueue(o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestRabbitMQQueue_MessagesThrough runs the workload against a one-node
// RabbitMQ: every operation is a message published with a confirm,
// delivered and acked; what stays in the queue is the paced backlog, and
// Close deletes the queues.
func TestRabbitMQQueue_MessagesThrough(t *testing.T) {
	url := startRabbitMQ(t)
	w, err := NewRabbitMQQueue(bench.RabbitMQQueueOptions{
		URLs: []string{url}, Queues: 2, Producers: 2, Size: 200, Prefetch: 1, Wait: 10 * time.Second, QueuePrefix: "bench-test-",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rep := runFor(t, w, 3, 60)
	if rep.Ops != 60 || rep.Errors != 0 {
		t.Fatalf("ops %d, errors %d (%v); want 60, 0", rep.Ops, rep.Errors, rep.ErrorKinds)
	}
	w.stop()
	w.wg.Wait() // producers stopped: the counts are final
	sent, failed, last := w.Sent()
	if sent < 60 || failed != 0 {
		t.Fatalf("sent %d, failed %d (%s); want at least 60, 0", sent, failed, last)
	}

	c, err := rmqDial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, name := range w.Queues() {
		q, err := ch.QueueDeclarePassive(name, true, false, false, false, amqp.Table{"x-queue-type": "quorum"})
		if err != nil {
			t.Fatalf("queue %s: %v", name, err)
		}
		stored += q.Messages
	}
	// Ready messages: those confirmed and not taken, less deliveries
	// pushed to the consumers ahead (prefetch 1: one per consumer), plus
	// publishes stored but cut short before their confirm when the
	// producers stopped (one per producer).
	if backlog := int(sent) - 60; stored < backlog-3 || stored > backlog+2 {
		t.Errorf("queues hold %d ready messages; want %d sent - 60 acked = %d (less up to 3 prefetched, plus up to 2 unconfirmed)", stored, sent, backlog)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ch2, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	_, err = ch2.QueueDeclarePassive(w.Queues()[0], true, false, false, false, nil)
	if ae, ok := errors.AsType[*amqp.Error](err); !ok || ae.Code != amqp.NotFound {
		t.Errorf("after Close, queue %s: %v; want 404 NOT_FOUND", w.Queues()[0], err)
	}
}

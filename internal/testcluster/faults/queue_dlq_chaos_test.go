package faults_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// delayTolerance is how early a delayed message may be delivered, by the
// wall clock of the test, compared with its send's start plus its delay:
// the leader stamps the send no earlier than the request arrives and
// delivers the message only once a later stamp is past it, so on one clock
// only the truncation of both times to milliseconds remains. Across
// machines the clocks' difference adds to it (docs/API.md).
const delayTolerance = time.Millisecond

// dlqLog is what the dead-letter chaos workload saw.
type dlqLog struct {
	mu      sync.Mutex
	sent    map[string]bool          // bodies whose send was acknowledged
	unknown map[string]bool          // bodies whose send's outcome is unknown
	delay   map[string]time.Duration // delayed bodies: their delay
	called  map[string]int64         // wall time (Unix ms) each send was first called
	acked   map[string]int           // acknowledged acks per body
	dead    map[string]int           // acknowledged dead nacks per body
	letters map[string][]client.QueueMessage
	early   []string // delayed messages delivered early
}

// Producers send to a queue with max_deliveries 3 and a dead-letter queue
// on another partition, some messages delayed; consumers ack, nack (now,
// later, or dead) or let leases lapse, retrying every call through other
// nodes with the same idempotency key, while partition leaders are killed
// and moved. Then both queues are drained: every acknowledged send was
// acknowledged once or dead-lettered once, never both; no delayed message
// came before its time; nothing is left moving.
func TestChaos_QueueDeadLettersUnderKills(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	const nodes, partitions, producers, consumers, perProducer = 3, 8, 3, 4, 60
	c := newChaosCluster(t, partitions)
	start := time.Now()
	work, dead := "work", pickOtherPartition(c, "work")
	testcluster.SignUp(t, c, 0, 0, "owner")
	var api []*client.Client
	for n := range nodes {
		api = append(api, testcluster.SignIn(t, c, n, "owner"))
	}
	ctx := testcluster.StepContext(t)
	if _, err := api[0].CreateQueue(ctx, dead); err != nil {
		t.Fatal(err)
	}
	maxDeliveries := uint64(3)
	if _, err := api[1].CreateQueueWith(ctx, work, client.QueueSettings{MaxDeliveries: &maxDeliveries, DeadLetter: &dead}); err != nil {
		t.Fatal(err)
	}
	parts := []uint64{c.Node(0).Router().PartitionOf(work), c.Node(0).Router().PartitionOf(dead)}
	log := &dlqLog{sent: map[string]bool{}, unknown: map[string]bool{}, delay: map[string]time.Duration{}, called: map[string]int64{},
		acked: map[string]int{}, dead: map[string]int{}, letters: map[string][]client.QueueMessage{}}
	var sendWG, takeWG sync.WaitGroup
	stopTake := make(chan struct{})
	var draining atomic.Bool
	problems := make(chan error, producers+consumers+1)
	for p := range producers {
		sendWG.Go(func() { produceDLQ(p, perProducer, api, work, log, problems) })
	}
	for cn := range consumers {
		takeWG.Go(func() { consumeDLQ(cn, api, work, log, &draining, stopTake, problems) })
	}
	kills := killLeaders(t, c, 91, parts, scaledKills(2))
	moves := moveLeaders(t, c, 92, parts, 3)
	sendWG.Wait()
	draining.Store(true)
	poll.Until(t, 120*time.Second, "work drained and its dead letters moved", func() error {
		q, err := api[0].GetQueue(testcluster.StepContext(t), work)
		if err != nil {
			return err
		}
		if q.Messages != 0 || q.Stats.Moving != 0 {
			return fmt.Errorf("%s holds %d messages, %d moving", work, q.Messages, q.Stats.Moving)
		}
		return nil
	})
	close(stopTake)
	takeWG.Wait()
	drainDeadLetters(t, api, dead, log)
	close(problems)
	for err := range problems {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	checkDLQLog(t, log, maxDeliveries, work)
	t.Logf("%d sends (%d delayed), %d acked, %d dead-lettered, %d leader kills, %d leader moves, %v",
		len(log.sent)+len(log.unknown), len(log.delay), len(log.acked), len(log.letters), kills, moves, time.Since(start).Round(time.Second))
}

// pickOtherPartition returns a queue name on another partition than q's.
func pickOtherPartition(c *testcluster.Cluster, q string) string {
	r := c.Node(0).Router()
	for i := 0; ; i++ {
		name := fmt.Sprintf("dead%d", i)
		if r.PartitionOf(name) != r.PartitionOf(q) {
			return name
		}
	}
}

// moveLeaders moves the leadership of a random one of the partitions to
// another of its replicas, moves times.
func moveLeaders(t *testing.T, c *testcluster.Cluster, seed uint64, partitions []uint64, moves int) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	done := 0
	for range moves {
		p := partitions[rng.IntN(len(partitions))]
		from := c.LeaderOf(p)
		if from < 0 {
			continue
		}
		to := (from + 1 + rng.IntN(c.Len()-1)) % c.Len()
		r, ok := anyMap(c).ReplicaOn(p, c.Node(to).ID())
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.Node(from).Engine().TransferLeader(ctx, p, r.ID); err == nil {
			done++
		}
		cancel()
		time.Sleep(300 * time.Millisecond)
	}
	return done
}

// produceDLQ sends n messages, every third one delayed.
func produceDLQ(p, n int, api []*client.Client, q string, log *dlqLog, problems chan<- error) {
	rng := rand.New(rand.NewPCG(uint64(p), 41))
	for i := range n {
		body, key := fmt.Sprintf("p%d-%d", p, i), fmt.Sprintf("send-%d-%d", p, i)
		opts := client.SendOptions{}
		if i%3 == 0 {
			opts.Delay = time.Duration(100+rng.IntN(600)) * time.Millisecond
		}
		called := time.Now().UnixMilli()
		err, _ := retryAcrossNodes(len(api), rng.IntN(len(api)), time.Now().Add(60*time.Second), refused,
			func(ctx context.Context, node int) error {
				_, err := api[node].Send(client.WithIdempotencyKey(ctx, key), q, body, opts)
				return err
			})
		log.mu.Lock()
		log.called[body] = called
		if opts.Delay > 0 {
			log.delay[body] = opts.Delay
		}
		if err == nil {
			log.sent[body] = true
		} else {
			log.unknown[body] = true
		}
		log.mu.Unlock()
		if err != nil && refused(err) {
			problems <- fmt.Errorf("send %s refused: %w", body, err)
			return
		}
	}
}

// consumeDLQ receives leased messages and acks (always while draining),
// nacks now, later or dead, or lets the lease lapse.
func consumeDLQ(cn int, api []*client.Client, q string, log *dlqLog, draining *atomic.Bool, stop <-chan struct{}, problems chan<- error) {
	rng := rand.New(rand.NewPCG(uint64(cn), 43))
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("recv-%d-%d", cn, n)
		var msg client.QueueMessage
		var found bool
		err, _ := retryAcrossNodes(len(api), rng.IntN(len(api)), time.Now().Add(60*time.Second), refused,
			func(ctx context.Context, node int) (err error) {
				msg, found, err = api[node].Receive(client.WithIdempotencyKey(ctx, key), q, client.ReceiveOptions{AckTimeout: 400 * time.Millisecond})
				return err
			})
		if err != nil {
			problems <- fmt.Errorf("consumer %d: receive: %w", cn, err)
			return
		}
		if !found {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		log.noteDelivery(msg, time.Now().UnixMilli())
		choice := rng.IntN(10)
		if draining.Load() {
			choice = 0
		}
		var call func(ctx context.Context, node int) error
		switch {
		case choice < 5:
			call = func(ctx context.Context, node int) error { return api[node].Ack(ctx, q, msg.Receipt) }
		case choice < 7:
			o := client.NackOptions{Reason: "busy", Delay: time.Duration(rng.IntN(2)) * 50 * time.Millisecond}
			call = func(ctx context.Context, node int) error { return api[node].Nack(ctx, q, msg.Receipt, o) }
		case choice < 8:
			o := client.NackOptions{Reason: "poison", Dead: true}
			call = func(ctx context.Context, node int) error { return api[node].Nack(ctx, q, msg.Receipt, o) }
		default:
			continue // a consumer that crashed: the lease lapses
		}
		opKey := "op-" + key
		err, _ = retryAcrossNodes(len(api), rng.IntN(len(api)), time.Now().Add(60*time.Second), refused,
			func(ctx context.Context, node int) error { return call(client.WithIdempotencyKey(ctx, opKey), node) })
		var ce *client.Error
		switch {
		case err == nil:
			log.mu.Lock()
			if choice < 5 {
				log.acked[msg.Body]++
			} else if choice == 7 {
				log.dead[msg.Body]++
			}
			log.mu.Unlock()
		case errors.As(err, &ce) && ce.Status == 409: // the lease lapsed first
		default:
			problems <- fmt.Errorf("consumer %d: settle %d: %w", cn, msg.ID, err)
			return
		}
	}
}

// noteDelivery records a delayed message delivered before its time.
func (l *dlqLog) noteDelivery(m client.QueueMessage, returned int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := l.delay[m.Body]; ok && returned < l.called[m.Body]+d.Milliseconds()-delayTolerance.Milliseconds() {
		l.early = append(l.early, fmt.Sprintf("%s sent at %d with delay %v came at %d", m.Body, l.called[m.Body], d, returned))
	}
}

// drainDeadLetters takes every message of the dead-letter queue.
func drainDeadLetters(t *testing.T, api []*client.Client, q string, log *dlqLog) {
	t.Helper()
	for i := 0; ; i++ {
		var msgs []client.QueueMessage
		err, _ := retryAcrossNodes(len(api), i, time.Now().Add(60*time.Second), refused, func(ctx context.Context, node int) (err error) {
			msgs, err = api[node].ReceiveMany(client.WithIdempotencyKey(ctx, fmt.Sprintf("drain-%d", i)), q, 100, client.ReceiveOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("drain %s: %v", q, err)
		}
		if len(msgs) == 0 {
			return
		}
		for _, m := range msgs {
			log.letters[m.Body] = append(log.letters[m.Body], m)
		}
	}
}

// checkDLQLog checks that every acknowledged send ended once: acked or
// dead-lettered; that dead letters say why truthfully; that nothing came
// early.
func checkDLQLog(t *testing.T, log *dlqLog, maxDeliveries uint64, origin string) {
	t.Helper()
	for _, e := range log.early {
		t.Errorf("delivered early: %s", e)
	}
	for body := range log.sent {
		if n := log.acked[body] + len(log.letters[body]); n != 1 {
			t.Errorf("%s: acknowledged send acked %d times and dead-lettered %d times", body, log.acked[body], len(log.letters[body]))
		}
	}
	for body, ls := range log.letters {
		if !log.sent[body] && !log.unknown[body] {
			t.Errorf("dead letter %q was never sent", body)
			continue
		}
		if len(ls) != 1 {
			continue // reported above
		}
		l := ls[0]
		switch {
		case l.Origin != origin:
			t.Errorf("dead letter %q comes from %q", body, l.Origin)
		case l.DeadReason == "delivery_limit" && l.Deliveries != maxDeliveries+1: // the drain's receive counts too
			t.Errorf("dead letter %q: delivery limit after %d deliveries", body, l.Deliveries)
		case l.DeadReason == "rejected" && log.dead[body] != 1:
			t.Errorf("dead letter %q: rejected, but no dead nack of it was acknowledged", body)
		case l.DeadReason != "rejected" && l.DeadReason != "delivery_limit":
			t.Errorf("dead letter %q: reason %q", body, l.DeadReason)
		}
	}
	for body, n := range log.dead {
		if n != 1 || len(log.letters[body]) != 1 || log.letters[body][0].DeadReason != "rejected" {
			t.Errorf("%s: dead nack acknowledged %d times; dead letters %+v", body, n, log.letters[body])
		}
	}
	for body := range log.unknown {
		if n := log.acked[body] + len(log.letters[body]); n > 1 {
			t.Errorf("%s (send outcome unknown) ended %d times", body, n)
		}
	}
}

package faults_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// delivery is one message a consumer of the queue chaos test took.
type delivery struct {
	consumer int
	msg      client.QueueMessage
	leased   bool
	leaseMs  int64 // the ack timeout asked for
	called   int64 // wall time (Unix ms) of the receive's first attempt
	returned int64 // wall time (Unix ms) the receive returned
	acked    bool  // removed: acknowledged, or taken without a lease
}

// queueLog records what the queue chaos workload saw, per queue.
type queueLog struct {
	mu        sync.Mutex
	sent      map[string]map[string]uint64 // queue -> body -> acknowledged id
	unknown   map[string]map[string]bool   // queue -> bodies whose send was never acknowledged
	delivered map[string][]delivery        // queue -> deliveries in the order they returned
}

// Producers send to four queues and consumers take from them, some with
// leases they acknowledge (or now and then let lapse) and some without,
// retrying every call through other nodes with the same idempotency key,
// while partition leaders are killed. Then the queues are drained and the
// contract of internal/queue is checked exactly: ids are gap-free from 1 in
// send order; every acknowledged send is delivered, nothing else is; a
// message is delivered again only after its lease lapsed unacknowledged,
// each delivery counting one more; a consumer takes fresh messages in id
// order; every queue ends empty.
func TestChaos_QueueUnderLeaderKills(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	const nodes, partitions, producers, consumers = 3, 8, 4, 6
	queues := []string{"q0", "q1", "q2", "q3"}
	c := newChaosCluster(t, partitions)
	start := time.Now()

	clientsOf := func(user string) []*client.Client {
		testcluster.SignUp(t, c, 0, 0, user)
		var out []*client.Client
		for n := 0; n < nodes; n++ {
			out = append(out, testcluster.SignIn(t, c, n, user))
		}
		return out
	}
	prod, cons := clientsOf("producer"), [][]*client.Client{clientsOf("alice"), clientsOf("bob")}
	parts := map[uint64]bool{}
	for i, q := range queues {
		if _, err := prod[i%nodes].CreateQueue(testcluster.StepContext(t), q); err != nil {
			t.Fatalf("create %s: %v", q, err)
		}
		parts[c.Node(0).Router().PartitionOf(q)] = true
	}
	var partList []uint64
	for p := range parts {
		partList = append(partList, p)
	}
	slices.Sort(partList)

	log := &queueLog{sent: map[string]map[string]uint64{}, unknown: map[string]map[string]bool{}, delivered: map[string][]delivery{}}
	for _, q := range queues {
		log.sent[q], log.unknown[q] = map[string]uint64{}, map[string]bool{}
	}
	var (
		stopSend, stopTake = make(chan struct{}), make(chan struct{})
		draining           atomic.Bool
		retries, skipped   atomic.Int64
		sendWG, takeWG     sync.WaitGroup
		problems           = make(chan error, producers+consumers)
	)
	for p := 0; p < producers; p++ {
		sendWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 21))
			for n := 0; ; n++ {
				select {
				case <-stopSend:
					return
				default:
				}
				q, body, key := queues[rng.IntN(len(queues))], fmt.Sprintf("p%d-%d", p, n), fmt.Sprintf("send-%d-%d", p, n)
				var res client.SendResult
				err, failed := retryAcrossNodes(nodes, rng.IntN(nodes), time.Now().Add(60*time.Second), refused,
					func(ctx context.Context, node int) (err error) {
						res, err = prod[node].Send(client.WithIdempotencyKey(ctx, key), q, body, client.SendOptions{})
						return err
					})
				retries.Add(int64(failed))
				log.mu.Lock()
				if err == nil {
					log.sent[q][body] = res.ID
				} else {
					log.unknown[q][body] = true
				}
				log.mu.Unlock()
				if err != nil && refused(err) {
					problems <- fmt.Errorf("send %s to %s refused: %w", body, q, err)
					return
				}
			}
		})
	}
	for cn := 0; cn < consumers; cn++ {
		takeWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(cn), 31))
			api := cons[cn%len(cons)]
			leased := cn%3 != 0 // every third consumer takes without a lease
			for n := 0; ; n++ {
				select {
				case <-stopTake:
					return
				default:
				}
				q, key := queues[rng.IntN(len(queues))], fmt.Sprintf("recv-%d-%d", cn, n)
				opts := client.ReceiveOptions{}
				if leased {
					opts.AckTimeout = time.Duration(300+rng.IntN(400)) * time.Millisecond
				}
				var msg client.QueueMessage
				var found bool
				called := time.Now().UnixMilli()
				err, failed := retryAcrossNodes(nodes, rng.IntN(nodes), time.Now().Add(60*time.Second), refused,
					func(ctx context.Context, node int) (err error) {
						msg, found, err = api[node].Receive(client.WithIdempotencyKey(ctx, key), q, opts)
						return err
					})
				retries.Add(int64(failed))
				if err != nil {
					problems <- fmt.Errorf("consumer %d: receive from %s: %w", cn, q, err)
					return
				}
				if !found {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				d := delivery{consumer: cn, msg: msg, leased: leased, leaseMs: opts.AckTimeout.Milliseconds(),
					called: called, returned: time.Now().UnixMilli(), acked: !leased}
				if leased && (draining.Load() || rng.IntN(8) != 0) {
					ackKey := "ack-" + key
					err, failed := retryAcrossNodes(nodes, rng.IntN(nodes), time.Now().Add(60*time.Second), refused,
						func(ctx context.Context, node int) error {
							return api[node].Ack(client.WithIdempotencyKey(ctx, ackKey), q, msg.Receipt)
						})
					retries.Add(int64(failed))
					var ce *client.Error
					switch {
					case err == nil:
						d.acked = true
					case errors.As(err, &ce) && ce.Status == 409: // the lease lapsed first
					default:
						problems <- fmt.Errorf("consumer %d: ack %s/%d: %w", cn, q, msg.ID, err)
						return
					}
				} else if leased {
					skipped.Add(1) // a consumer that "crashed": the lease will lapse
				}
				log.mu.Lock()
				log.delivered[q] = append(log.delivered[q], d)
				log.mu.Unlock()
			}
		})
	}

	kills := killLeaders(t, c, 77, partList, scaledKills(2))
	close(stopSend)
	sendWG.Wait()
	draining.Store(true)
	poll.Until(t, 90*time.Second, "queues drained", func() error {
		qs, err := prod[0].ListQueues(testcluster.StepContext(t), false)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if q.Messages != 0 || q.InFlight != 0 {
				return fmt.Errorf("%s holds %d messages (%d in flight)", q.Name, q.Messages, q.InFlight)
			}
		}
		return nil
	})
	close(stopTake)
	takeWG.Wait()
	close(problems)
	for err := range problems {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	c.VerifyReplicas(30 * time.Second)

	sends, deliveries := 0, 0
	for _, q := range queues {
		checkQueueLog(t, q, log.sent[q], log.unknown[q], log.delivered[q])
		sends += len(log.sent[q]) + len(log.unknown[q])
		deliveries += len(log.delivered[q])
	}
	t.Logf("%d sends, %d deliveries (%d leases let lapse on purpose), %d failed attempts retried, %d leader kills, %v",
		sends, deliveries, skipped.Load(), retries.Load(), kills, time.Since(start).Round(time.Second))
}

// checkQueueLog checks one drained queue's sends and deliveries against the
// queue contract.
func checkQueueLog(t *testing.T, q string, sent map[string]uint64, unknown map[string]bool, delivered []delivery) {
	t.Helper()
	byID := map[uint64][]delivery{}
	for _, d := range delivered {
		byID[d.msg.ID] = append(byID[d.msg.ID], d)
	}
	// Every acknowledged send was delivered with its id and body; ids are
	// gap-free from 1, and only sends whose outcome is unknown may fill ids
	// no acknowledged send has.
	ids := map[uint64]string{}
	for body, id := range sent {
		if other, dup := ids[id]; dup {
			t.Fatalf("%s: id %d acknowledged for %q and %q", q, id, other, body)
		}
		ids[id] = body
		if len(byID[id]) == 0 {
			t.Fatalf("%s: acknowledged send %q (id %d) was never delivered", q, body, id)
		}
	}
	for id := uint64(1); id <= uint64(len(byID)); id++ {
		ds := byID[id]
		slices.SortFunc(ds, func(a, b delivery) int { return int(a.msg.Deliveries) - int(b.msg.Deliveries) })
		if len(ds) == 0 {
			t.Fatalf("%s: id %d never delivered, but %d ids were: ids are not gap-free", q, id, len(byID))
		}
		body := ds[0].msg.Body
		if want, ok := ids[id]; ok && body != want {
			t.Fatalf("%s: id %d delivered as %q, acknowledged for %q", q, id, body, want)
		}
		if _, ok := ids[id]; !ok && !unknown[body] {
			t.Fatalf("%s: id %d carries %q, which nobody sent", q, id, body)
		}
		checkDeliveries(t, q, ds)
	}
	if len(byID) != len(sent)+countDelivered(unknown, byID) {
		t.Fatalf("%s: %d distinct ids delivered, %d sends acknowledged", q, len(byID), len(sent))
	}
	// A consumer takes fresh messages (first deliveries) in id order: a
	// receive takes the oldest eligible message, and an older one that was
	// not eligible had been delivered already.
	last := map[int]uint64{}
	for _, d := range delivered {
		if d.msg.Deliveries != 1 {
			continue
		}
		if d.msg.ID <= last[d.consumer] {
			t.Fatalf("%s: consumer %d took fresh message %d after %d: not in send order", q, d.consumer, d.msg.ID, last[d.consumer])
		}
		last[d.consumer] = d.msg.ID
	}
}

// checkDeliveries checks the deliveries of one message: numbered 1, 2, ...
// with the same body; every one but the last leased, unacknowledged and
// followed by the next only after its lease expired; the last one removed
// the message.
func checkDeliveries(t *testing.T, q string, ds []delivery) {
	t.Helper()
	for i, d := range ds {
		if d.msg.Deliveries != uint64(i+1) || d.msg.Body != ds[0].msg.Body {
			t.Fatalf("%s: message %d: delivery %d of %d reports deliveries=%d body %q (first %q)", q, d.msg.ID, i+1, len(ds), d.msg.Deliveries, d.msg.Body, ds[0].msg.Body)
		}
		if d.leased && d.msg.LeaseExpiresAt < d.called+d.leaseMs {
			t.Fatalf("%s: message %d leased for %d ms at %d expires at %d: the lease is shorter than asked", q, d.msg.ID, d.leaseMs, d.called, d.msg.LeaseExpiresAt)
		}
		if i == len(ds)-1 {
			if !d.acked {
				t.Fatalf("%s: message %d: its last delivery was not acknowledged, yet the queue drained", q, d.msg.ID)
			}
			continue
		}
		switch next := ds[i+1]; {
		case !d.leased || d.acked:
			t.Fatalf("%s: message %d delivered again after it was removed (delivery %d: leased=%v acked=%v)", q, d.msg.ID, i+1, d.leased, d.acked)
		case next.returned < d.msg.LeaseExpiresAt:
			t.Fatalf("%s: message %d delivered again at %d, before its lease expired at %d", q, d.msg.ID, next.returned, d.msg.LeaseExpiresAt)
		}
	}
}

// countDelivered counts the sends of unknown outcome that were delivered.
func countDelivered(unknown map[string]bool, byID map[uint64][]delivery) int {
	n := 0
	for _, ds := range byID {
		if unknown[ds[0].msg.Body] {
			n++
		}
	}
	return n
}

package testcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
)

// A queue consumer on a live stream served by a node that is not the
// queue's leader (its receives are forwarded) survives that node's death:
// the client opens a stream on another node and consumes on; every message
// sent arrives at least once, first deliveries come in send order but for
// those the dead consumer held (they come back when their leases lapse), a
// message comes twice only if the dead node delivered it (its ack may not
// have been applied), and at the end nothing is left in the queue or
// leased: every ack on the living node was applied.
func TestCluster_QueueConsumerSurvivesItsNode(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 3, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const q, total, prefetch = "work", 200, 5
	if _, err := c.Client(0).CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < total; b += 100 {
		batch := make([]client.BatchMessage, 100)
		for i := range batch {
			batch[i].Body = fmt.Sprintf("m%03d", b+i)
		}
		if _, _, err := c.Client(0).SendBatch(ctx, q, batch); err != nil {
			t.Fatal(err)
		}
	}
	leader := c.LeaderOf(c.Node(0).Router().PartitionOf(q))
	if leader < 0 {
		t.Fatal("no leader for the queue's partition")
	}
	first, second := (leader+1)%3, (leader+2)%3

	seen := map[string]int{}
	var order []string
	// consume reads node's stream until upTo messages were seen; with
	// drain, on until the queue holds nothing, stored or leased (messages
	// the dead consumer held come back only when their leases lapse).
	consume := func(node, upTo int, drain bool) (delivered map[string]int) {
		delivered = map[string]int{}
		t.Helper()
		st, err := c.Client(node).Stream(ctx, client.StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.Consume(ctx, "c", q, client.ConsumeOptions{Prefetch: prefetch, AckTimeout: 2 * time.Second}); err != nil {
			t.Fatal(err)
		}
		reached, drained := make(chan struct{}), make(chan struct{})
		if drain {
			go func() { // ends the stream once the queue is empty
				select {
				case <-reached:
				case <-ctx.Done():
					return
				}
				for ctx.Err() == nil {
					if info, err := c.Client(node).GetQueue(ctx, q); err == nil && info.Messages == 0 && info.InFlight == 0 {
						close(drained)
						st.Close()
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
		}
		for {
			if len(order) >= upTo {
				if !drain {
					break
				}
				select {
				case <-reached:
				default:
					close(reached)
				}
			}
			f, err := st.Next(ctx)
			if err != nil {
				select {
				case <-drained:
					return delivered
				default:
				}
				t.Fatalf("stream on n%d: %v", node+1, err)
			}
			switch f.Type {
			case client.FrameError:
				t.Fatalf("consumer on n%d: %s %s", node+1, f.Code, f.Message)
			case client.FrameQueueMessage:
				body := f.Delivery.Body
				if seen[body] == 0 {
					order = append(order, body)
				}
				seen[body]++
				delivered[body]++
				if err := st.AckQueue(ctx, "c", f.Delivery.Receipt); err != nil {
					t.Fatalf("ack on n%d: %v", node+1, err)
				}
			}
		}
		return delivered
	}
	before := consume(first, 60, false)
	c.Kill(first)
	after := consume(second, total, true)

	for i, body := range order[:60] {
		if want := fmt.Sprintf("m%03d", i); body != want {
			t.Fatalf("first delivery %d is %s, want %s (send order)", i, body, want)
		}
	}
	// After the death the messages the dead consumer held come back when
	// their leases lapse, behind those that were ready; the rest keep
	// their order.
	late, last := 0, ""
	for _, body := range order[60:] {
		if body < last {
			late++
			continue
		}
		last = body
	}
	if late > 2*prefetch {
		t.Fatalf("%d messages out of send order after n%d died, more than it held: %v", late, first+1, order[60:])
	}
	// Only the dead consumer's acks may have been lost: a message comes
	// again only if it was delivered before the death, and once after it.
	twice := 0
	for body, n := range after {
		switch {
		case n > 1:
			t.Fatalf("%s delivered %d times by the consumer on n%d, which lived", body, n, second+1)
		case before[body] > 0:
			twice++
		}
	}
	poll.Until(t, 30*time.Second, "every message acknowledged", func() error {
		info, err := c.Client(second).GetQueue(ctx, q)
		if err != nil {
			return err
		}
		if info.Messages != 0 || info.InFlight != 0 {
			return fmt.Errorf("%d messages, %d in flight", info.Messages, info.InFlight)
		}
		return nil
	})
	t.Logf("%d messages, %d delivered again after n%d died", total, twice, first+1)
}

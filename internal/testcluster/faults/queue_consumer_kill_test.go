package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// The message a live-stream consumer holds comes back soon after its
// node is killed with SIGKILL, though the consumer asked for a minute to
// acknowledge it: the node leases it a few seconds at a time
// (api.DefaultConsumerLease) and renews the lease while the consumer runs;
// a dead node renews nothing, and cannot return it as a consumer that ends
// does.
func TestProcess_QueueConsumerKill9ReturnsItsMessagesEarly(t *testing.T) {
	pc := startProcCluster(t, 3)
	cls := pc.up()
	testcluster.WaitReplicated(t, cls[0], time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const q, ackTimeout = "jobs", time.Minute
	if _, err := cls[0].CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, err := cls[0].Send(ctx, q, "held", client.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	const doomed = 1
	st, err := cls[doomed].Stream(ctx, client.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Consume(ctx, "c", q, client.ConsumeOptions{Prefetch: 1, AckTimeout: ackTimeout}); err != nil {
		t.Fatal(err)
	}
	for delivered := false; !delivered; {
		f, err := st.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch f.Type {
		case client.FrameError:
			t.Fatalf("consumer: %s %s", f.Code, f.Message)
		case client.FrameQueueMessage:
			if f.Delivery.Body != "held" {
				t.Fatalf("delivered %q, want held", f.Delivery.Body)
			}
			delivered = true
		}
	}
	pc.setDown(doomed, true)
	pc.procs[doomed].kill9()
	killed := time.Now()
	var got client.QueueMessage
	poll.Until(t, ackTimeout/2, "the killed consumer's message back", func() error {
		for _, cl := range pc.up() {
			rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
			msg, found, err := cl.Receive(rctx, q, client.ReceiveOptions{})
			rcancel()
			if err == nil && found {
				got = msg
				return nil
			}
		}
		return fmt.Errorf("not back yet")
	})
	if got.Body != "held" || got.Deliveries != 2 {
		t.Fatalf("received %+v, want held, delivered a second time", got)
	}
	t.Logf("back %v after its consumer's node was killed (its ack timeout: %v)", time.Since(killed).Round(100*time.Millisecond), ackTimeout)
}

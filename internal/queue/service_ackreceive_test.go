package queue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/queue"
)

func TestService_ReceiveAcks(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t, 2, queue.Config{})
	mustCreate(t, s, "alice", "q")
	mustSend(t, s, "alice", "q", "", "one")
	mustSend(t, s, "alice", "q", "", "two")
	lease := queue.ReceiveOptions{AckTimeout: time.Minute}
	one := mustReceive(t, s, "bob", "q", lease)

	t.Run("refused before anything is proposed", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			ack  []string
			code errs.Code
		}{
			{"empty receipt", []string{one.Receipt, ""}, errs.Invalid},
			{"not a receipt", []string{"nope"}, errs.Conflict},
			{"one message twice", []string{one.Receipt, one.Receipt}, errs.Invalid},
			{"too many", slices.Repeat([]string{one.Receipt}, queue.MaxBatch+1), errs.Invalid},
		} {
			o := lease
			o.Ack = tc.ack
			_, _, err := s.Receive(ctx, "bob", "q", o, "")
			if errs.CodeOf(err) != tc.code {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
			}
		}
	})
	t.Run("acks, then takes the next", func(t *testing.T) {
		o := lease
		o.Ack = []string{one.Receipt}
		two := mustReceive(t, s, "bob", "q", o)
		if string(two.Body) != "two" {
			t.Fatalf("took %q, want two", two.Body)
		}
		wantCode(t, s.Ack(ctx, "bob", "q", one.Receipt, ""), errs.Conflict) // acknowledged already
		one = two
	})
	t.Run("a long poll acknowledges once, then waits", func(t *testing.T) {
		o := lease
		o.Ack, o.Wait = []string{one.Receipt}, 300*time.Millisecond
		done := make(chan queue.Message, 1)
		go func() {
			msg, _, err := s.Receive(ctx, "bob", "q", o, "poll-1")
			if err != nil {
				t.Errorf("long poll: %v", err)
			}
			done <- msg
		}()
		time.Sleep(50 * time.Millisecond) // let it find nothing and wait: its later attempts carry no ack
		mustSend(t, s, "alice", "q", "", "three")
		if msg := <-done; string(msg.Body) != "three" {
			t.Fatalf("long poll took %q, want three", msg.Body)
		}
		wantCode(t, s.Ack(ctx, "bob", "q", one.Receipt, ""), errs.Conflict)
		// The same idempotency key replays the recorded attempts: no
		// second message taken, no ack refused.
		mustSend(t, s, "alice", "q", "", "four")
		msg, found, err := s.Receive(ctx, "bob", "q", o, "poll-1")
		if err != nil || !found || string(msg.Body) != "three" {
			t.Fatalf("retried long poll = %q, %v, %v; want three again", msg.Body, found, err)
		}
	})
}

func TestService_ReceiveAcksWaitsForTheUpgrade(t *testing.T) {
	ctx := context.Background()
	protocol := queue.AckOnReceiveProtocol - 1
	s, _ := newService(t, 1, queue.Config{ClusterProtocol: func() int { return protocol }})
	mustCreate(t, s, "alice", "q")
	mustSend(t, s, "alice", "q", "", "one")
	mustSend(t, s, "alice", "q", "", "two")
	one := mustReceive(t, s, "bob", "q", queue.ReceiveOptions{AckTimeout: time.Minute})
	o := queue.ReceiveOptions{AckTimeout: time.Minute, Ack: []string{one.Receipt}}
	_, _, err := s.Receive(ctx, "bob", "q", o, "")
	wantCode(t, err, errs.UpgradeInProgress)
	if err := s.Ack(ctx, "bob", "q", one.Receipt, ""); err != nil {
		t.Fatalf("the refused receive acknowledged: %v", err)
	}
	protocol = queue.AckOnReceiveProtocol
	two := mustReceive(t, s, "bob", "q", queue.ReceiveOptions{AckTimeout: time.Minute})
	o.Ack = []string{two.Receipt}
	if _, found, err := s.Receive(ctx, "bob", "q", o, ""); err != nil || found {
		t.Fatalf("receive acking two once upgraded = %v, %v; want nothing left", found, err)
	}
	wantCode(t, s.Ack(ctx, "bob", "q", two.Receipt, ""), errs.Conflict)
}

package testcluster_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// Queues through every node: sends to one receiver, receives from one
// sender, leases that lapse and are delivered again, acks after the lapse,
// long polls.
func TestAPI_Queues(t *testing.T) {
	forEachShape(t, func(t *testing.T, c *testcluster.Cluster) {
		ctx := apiCtx(t)
		n := c.Len()
		admin := signUpAdmin(t, c, 0, "root")
		sam := signUp(t, c, 1, 1, "sam")
		rita := signUp(t, c, 2, 2, "rita")
		ted := signUp(t, c, n-1, n-1, "ted")

		const q = "jobs"
		far := noReplica(c, q)
		if n == 4 && far < 0 {
			t.Fatal("a 4-node RF3 cluster has no node without a replica of the queue's partition")
		}
		if far < 0 {
			far = n - 1
		} else {
			t.Logf("n%d holds no replica of queue %q", far+1, q)
		}
		info, err := as(c, far, sam).CreateQueue(ctx, q)
		if err != nil || info.Name != q || info.Creator != "sam" {
			t.Fatalf("create = %+v, %v", info, err)
		}
		t.Run("refusals change nothing", func(t *testing.T) {
			for i := 0; i < n; i++ {
				_, err := as(c, i, rita).CreateQueue(ctx, q)
				mustStatus(t, err, http.StatusConflict, "conflict")
			}
			_, err := as(c, 0, rita).CreateQueue(ctx, "no spaces")
			mustStatus(t, err, http.StatusBadRequest, "invalid")
			_, err = as(c, far, rita).Send(ctx, q, strings.Repeat("x", 64<<10+1), client.SendOptions{})
			mustStatus(t, err, http.StatusRequestEntityTooLarge, "too_large")
			_, err = as(c, far, rita).Send(ctx, q, "", client.SendOptions{})
			mustStatus(t, err, http.StatusBadRequest, "invalid")
			_, err = as(c, far, rita).Send(ctx, "nope", "x", client.SendOptions{})
			mustStatus(t, err, http.StatusNotFound, "not_found")
			_, _, err = as(c, 1, rita).Receive(ctx, q, client.ReceiveOptions{AckTimeout: 13 * time.Hour})
			mustStatus(t, err, http.StatusBadRequest, "invalid")
			err = as(c, 1, rita).DeleteQueue(ctx, q)
			mustStatus(t, err, http.StatusForbidden, "forbidden")
			qs, err := as(c, 0, rita).ListQueues(ctx, false)
			if err != nil || len(qs) != 1 || qs[0].Name != q || qs[0].Messages != 0 || qs[0].LastID != 0 {
				t.Fatalf("queues after refusals = %+v, %v", qs, err)
			}
		})
		t.Run("send to a receiver, receive from a sender", func(t *testing.T) {
			toRita, err := as(c, 0, sam).Send(ctx, q, "for rita", client.SendOptions{To: "RITA"})
			if err != nil || toRita.ID != 1 {
				t.Fatalf("send = %+v, %v", toRita, err)
			}
			fromTed, err := as(c, far, ted).Send(ctx, q, "from ted", client.SendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Only rita may take sam's message; anyone may take ted's.
			if _, found, err := as(c, far, admin).Peek(ctx, q, "sam"); err != nil || found {
				t.Fatalf("admin's peek from sam = %v, %v; want nothing", found, err)
			}
			waiting, err := as(c, 1, admin).ListQueues(ctx, true)
			if err != nil || len(waiting) != 1 {
				t.Fatalf("admin's waiting queues = %+v, %v", waiting, err)
			}
			m, found, err := as(c, 2, rita).Peek(ctx, q, "")
			if err != nil || !found || m.ID != toRita.ID || m.To != "RITA" || m.Sender != "sam" {
				t.Fatalf("rita's peek = %+v %v %v", m, found, err)
			}
			m, found, err = as(c, far, rita).Receive(ctx, q, client.ReceiveOptions{From: "ted"})
			if err != nil || !found || m.ID != fromTed.ID || m.Body != "from ted" {
				t.Fatalf("rita's receive from ted = %+v %v %v", m, found, err)
			}
			m, found, err = as(c, 0, rita).Receive(ctx, q, client.ReceiveOptions{})
			if err != nil || !found || m.ID != toRita.ID || m.Body != "for rita" {
				t.Fatalf("rita's receive = %+v %v %v", m, found, err)
			}
			if _, found, err := as(c, n-1, rita).Receive(ctx, q, client.ReceiveOptions{}); err != nil || found {
				t.Fatalf("receive from an empty queue = %v, %v", found, err)
			}
		})
		t.Run("lease, redelivery, ack after lapse", func(t *testing.T) {
			sent, err := as(c, 1, sam).Send(ctx, q, "work item", client.SendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			const lease = 300 * time.Millisecond
			first, found, err := as(c, far, ted).Receive(ctx, q, client.ReceiveOptions{AckTimeout: lease})
			if err != nil || !found || first.ID != sent.ID || first.Receipt == "" || first.Deliveries != 1 {
				t.Fatalf("leased receive = %+v %v %v", first, found, err)
			}
			if _, found, err := as(c, 0, rita).Receive(ctx, q, client.ReceiveOptions{}); err != nil || found {
				t.Fatalf("a leased message was delivered to another receiver: %v %v", found, err)
			}
			var second client.QueueMessage
			poll.Until(t, 5*time.Second, "redelivery after the lease lapsed", func() error {
				m, found, err := as(c, 2, rita).Receive(ctx, q, client.ReceiveOptions{AckTimeout: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				if !found {
					return testcluster.ErrNotYet
				}
				second = m
				return nil
			})
			if second.ID != first.ID || second.Deliveries != 2 || second.Receipt == first.Receipt {
				t.Fatalf("redelivered %+v after %+v", second, first)
			}
			mustStatus(t, as(c, 0, ted).Ack(ctx, q, first.Receipt), http.StatusConflict, "conflict")
			mustStatus(t, as(c, 0, ted).Ack(ctx, q, second.Receipt), http.StatusConflict, "conflict") // not ted's lease
			if err := as(c, far, rita).Ack(ctx, q, second.Receipt); err != nil {
				t.Fatalf("ack of a live lease: %v", err)
			}
			mustStatus(t, as(c, 1, rita).Ack(ctx, q, second.Receipt), http.StatusConflict, "conflict")
			qs, err := as(c, 1, rita).ListQueues(ctx, false)
			if err != nil || qs[0].Messages != 0 || qs[0].InFlight != 0 {
				t.Fatalf("queue after ack = %+v, %v", qs, err)
			}
		})
		t.Run("long poll through every node", func(t *testing.T) {
			for i := 0; i < n; i++ {
				type result struct {
					m     client.QueueMessage
					found bool
					err   error
				}
				done := make(chan result, 1)
				go func() {
					m, found, err := as(c, i, rita).Receive(ctx, q, client.ReceiveOptions{Wait: 10 * time.Second})
					done <- result{m, found, err}
				}()
				time.Sleep(100 * time.Millisecond)
				start := time.Now()
				if _, err := as(c, (i+1)%n, sam).Send(ctx, q, "wake up", client.SendOptions{To: "rita"}); err != nil {
					t.Fatal(err)
				}
				r := <-done
				if r.err != nil || !r.found || r.m.Body != "wake up" {
					t.Fatalf("long poll via n%d = %+v %v %v", i+1, r.m, r.found, r.err)
				}
				t.Logf("long poll via n%d woke %v after the send", i+1, time.Since(start).Round(time.Millisecond))
			}
			start := time.Now()
			if _, found, err := as(c, far, rita).Receive(ctx, q, client.ReceiveOptions{Wait: 300 * time.Millisecond}); err != nil || found {
				t.Fatalf("idle long poll = %v, %v", found, err)
			}
			if d := time.Since(start); d < 300*time.Millisecond {
				t.Fatalf("idle long poll returned after %v", d)
			}
		})
		t.Run("delete", func(t *testing.T) {
			if _, err := as(c, 0, sam).Send(ctx, q, "left behind", client.SendOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := as(c, far, sam).DeleteQueue(ctx, q); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				_, _, err := as(c, i, rita).Peek(ctx, q, "")
				mustStatus(t, err, http.StatusNotFound, "not_found")
			}
			if _, err := as(c, 1, rita).CreateQueue(ctx, "scratch"); err != nil {
				t.Fatal(err)
			}
			if err := as(c, far, admin).DeleteQueue(ctx, "scratch"); err != nil {
				t.Fatalf("an admin deletes: %v", err)
			}
		})
	})
}

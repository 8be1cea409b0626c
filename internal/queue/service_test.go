package queue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/state/statetest"
	"github.com/parley-chat/parley/internal/wire"
)

// newReplicator returns an in-memory replicator of the queue state machine
// whose clock stands at statetest.Start until the test advances it, and
// whose Wait reports queue commands.
func newReplicator(partitions int) *statetest.Replicator {
	r := statetest.NewReplicator(partitions, queue.StateMachine{})
	r.Freeze(statetest.Start)
	r.NotifyOn(queue.TouchedKey)
	return r
}

func newService(t *testing.T, partitions int, cfg queue.Config) (*queue.Service, *statetest.Replicator) {
	t.Helper()
	r := newReplicator(partitions)
	cfg.Now = r.Now
	return queue.NewService(r, cfg), r
}

func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if got := errs.CodeOf(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

func mustCreate(t *testing.T, s *queue.Service, user, name string) {
	t.Helper()
	if _, err := s.Create(context.Background(), user, name, ""); err != nil {
		t.Fatalf("Create(%q): %v", name, err)
	}
}

func mustSend(t *testing.T, s *queue.Service, user, name, to, body string) uint64 {
	t.Helper()
	id, _, err := s.Send(context.Background(), user, name, to, []byte(body), "")
	if err != nil {
		t.Fatalf("Send to %q: %v", name, err)
	}
	return id
}

func mustReceive(t *testing.T, s *queue.Service, user, name string, o queue.ReceiveOptions) queue.Message {
	t.Helper()
	msg, found, err := s.Receive(context.Background(), user, name, o, "")
	if err != nil || !found {
		t.Fatalf("Receive by %s = (%+v, %v, %v), want a message", user, msg, found, err)
	}
	return msg
}

func TestService_CreateDelete(t *testing.T) {
	ctx := context.Background()
	isAdmin := func(_ context.Context, user string) (bool, error) {
		if user == "broken" {
			return false, errors.New("account store down")
		}
		return user == "root", nil
	}
	s, r := newService(t, 4, queue.Config{IsAdmin: isAdmin})
	info, err := s.Create(ctx, "alice", "jobs", "")
	if err != nil || info.Name != "jobs" || info.Creator != "alice" || info.CreatedMs != statetest.Start.UnixMilli() {
		t.Fatalf("Create = (%+v, %v)", info, err)
	}
	_, err = s.Create(ctx, "bob", "jobs", "")
	wantCode(t, err, errs.Conflict)
	for _, bad := range []string{"", "a/b", "white space", strings.Repeat("x", 65), "ünïcode"} {
		_, err := s.Create(ctx, "alice", bad, "")
		wantCode(t, err, errs.Invalid)
	}

	mustSend(t, s, "alice", "jobs", "", "x")
	mustSend(t, s, "alice", "jobs", "bob", "y")
	mustReceive(t, s, "bob", "jobs", queue.ReceiveOptions{AckTimeout: time.Minute})

	_, err = s.Delete(ctx, "bob", "jobs", "")
	wantCode(t, err, errs.Forbidden)
	_, err = s.Delete(ctx, "broken", "jobs", "")
	if err == nil || !strings.Contains(err.Error(), "account store down") {
		t.Fatalf("Delete with a failing IsAdmin = %v", err)
	}
	n, err := s.Delete(ctx, "alice", "jobs", "")
	if err != nil || n != 2 {
		t.Fatalf("Delete = (%d, %v), want 2 removed", n, err)
	}
	for _, k := range r.Keys(r.PartitionOf("jobs")) {
		if strings.HasPrefix(k, "q/jobs/") || k == "q/!/jobs" {
			t.Fatalf("key %q left after Delete", k)
		}
	}
	_, err = s.Delete(ctx, "alice", "jobs", "")
	wantCode(t, err, errs.NotFound)

	mustCreate(t, s, "alice", "jobs")
	if n, err := s.Delete(ctx, "root", "jobs", ""); err != nil || n != 0 {
		t.Fatalf("Delete by admin = (%d, %v)", n, err)
	}
}

func TestService_SendValidation(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t, 2, queue.Config{Limits: queue.Limits{MaxBody: 8}})
	mustCreate(t, s, "alice", "q")
	cases := []struct {
		name, queue, to, body string
		want                  errs.Code
		field                 string
	}{
		{"empty body", "q", "", "", errs.Invalid, "body"},
		{"body too large", "q", "", "123456789", errs.TooLarge, "body"},
		{"bad receiver", "q", "bob smith", "x", errs.Invalid, "to"},
		{"bad queue", "q/x", "", "x", errs.Invalid, "queue"},
		{"escape in queue", "q\x1b[2J", "", "x", errs.Invalid, "queue name: control character U+001B not allowed"},
		{"escape in receiver", "q", "bob\x1b]0;t\x07", "x", errs.Invalid, "to: control character U+001B not allowed"},
		{"override in receiver", "q", "bob\u202e", "x", errs.Invalid, "to: bidirectional formatting character U+202E not allowed"},
		{"missing queue", "nope", "", "x", errs.NotFound, "queue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.Send(ctx, "alice", tc.queue, tc.to, []byte(tc.body), "")
			wantCode(t, err, tc.want)
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q does not name %q", err, tc.field)
			}
		})
	}
	// Bodies are opaque bytes: escapes included.
	if id, ts, err := s.Send(ctx, "alice", "q", "", []byte("\x1b[2J\x00"), ""); err != nil || id != 1 || ts == 0 {
		t.Fatalf("Send of a body with control characters = (%d, %d, %v)", id, ts, err)
	}
	if id, ts, err := s.Send(ctx, "alice", "q", "", []byte("12345678"), ""); err != nil || id != 2 || ts == 0 {
		t.Fatalf("Send at the limit = (%d, %d, %v)", id, ts, err)
	}
	_, _, err := s.Send(ctx, "alice", "q", "", []byte("x"), strings.Repeat("k", wire.MaxIdempotencyKey+1))
	wantCode(t, err, errs.Invalid)
}

func TestService_Idempotency(t *testing.T) {
	ctx := context.Background()
	s, r := newService(t, 1, queue.Config{})
	mustCreate(t, s, "alice", "q")
	mustCreate(t, s, "alice", "q2")
	id1, ts1, err := s.Send(ctx, "alice", "q", "", []byte("first"), "req-1")
	if err != nil {
		t.Fatal(err)
	}
	r.Advance(time.Second)
	applied := r.Applied(1)
	id2, ts2, err := s.Send(ctx, "alice", "q", "", []byte("retry"), "req-1")
	if err != nil || id2 != id1 || ts2 != ts1 {
		t.Fatalf("retried Send = (%d, %d, %v), want the first (%d, %d)", id2, ts2, err, id1, ts1)
	}
	if r.Applied(1) != applied {
		t.Fatal("the retry was applied again")
	}
	if id, _, err := s.Send(ctx, "bob", "q", "", []byte("bob's"), "req-1"); err != nil || id != id1+1 {
		t.Fatalf("another user's key = (%d, %v), want a new message", id, err)
	}
	if id, _, err := s.Send(ctx, "alice", "q2", "", []byte("q2"), "req-1"); err != nil || id != 1 {
		t.Fatalf("the same key on another queue = (%d, %v), want a new message", id, err)
	}
	_, _, err = s.Receive(ctx, "alice", "q", queue.ReceiveOptions{}, "req-1")
	wantCode(t, err, errs.Conflict) // the key was used for a send

	msg := mustReceive(t, s, "carol", "q", queue.ReceiveOptions{AckTimeout: time.Minute})
	for range 2 {
		if err := s.Ack(ctx, "carol", "q", msg.Receipt, "ack-1"); err != nil {
			t.Fatalf("Ack with a key, twice: %v", err)
		}
	}
	wantCode(t, s.Ack(ctx, "carol", "q", msg.Receipt, ""), errs.Conflict)
}

func TestService_PeekReceive(t *testing.T) {
	ctx := context.Background()
	s, r := newService(t, 3, queue.Config{})
	mustCreate(t, s, "alice", "q")
	_, found, _, err := s.Peek(ctx, "bob", "q", "", false)
	if err != nil || found {
		t.Fatalf("Peek on empty = (%v, %v)", found, err)
	}
	mustSend(t, s, "alice", "q", "bob", "alice->bob")
	mustSend(t, s, "carol", "q", "", "carol->any")
	mustSend(t, s, "carol", "q", "bob", "carol->bob")

	r.StaleMs = 7
	msg, found, staleMs, err := s.Peek(ctx, "bob", "q", "carol", true)
	if err != nil || !found || string(msg.Body) != "carol->any" || staleMs != 7 || msg.Sender != "carol" {
		t.Fatalf("stale Peek from carol = (%+v, %v, %d, %v)", msg, found, staleMs, err)
	}
	if msg := mustReceive(t, s, "erin", "q", queue.ReceiveOptions{}); string(msg.Body) != "carol->any" {
		t.Fatalf("erin receives %q", msg.Body)
	}
	if msg := mustReceive(t, s, "bob", "q", queue.ReceiveOptions{From: "carol"}); string(msg.Body) != "carol->bob" || msg.Receiver != "bob" {
		t.Fatalf("bob receives from carol %+v", msg)
	}
	if msg := mustReceive(t, s, "bob", "q", queue.ReceiveOptions{}); string(msg.Body) != "alice->bob" || msg.ID != 1 || msg.Deliveries != 1 {
		t.Fatalf("bob receives %+v", msg)
	}
	if _, found, err := s.Receive(ctx, "bob", "q", queue.ReceiveOptions{}, ""); found || err != nil {
		t.Fatalf("Receive on empty = (%v, %v)", found, err)
	}
	for _, o := range []queue.ReceiveOptions{
		{From: "no one"}, {AckTimeout: -time.Second}, {AckTimeout: 13 * time.Hour}, {Wait: -1}, {Wait: time.Hour},
	} {
		_, _, err := s.Receive(ctx, "bob", "q", o, "")
		wantCode(t, err, errs.Invalid)
	}
	_, _, err = s.Receive(ctx, "bob", "nope", queue.ReceiveOptions{}, "")
	wantCode(t, err, errs.NotFound)
	_, _, _, err = s.Peek(ctx, "bob", "nope", "", false)
	wantCode(t, err, errs.NotFound)
	_, _, _, err = s.Peek(ctx, "bob", "q", "a b", false)
	wantCode(t, err, errs.Invalid)
}

func TestService_Leases(t *testing.T) {
	ctx := context.Background()
	s, r := newService(t, 2, queue.Config{})
	mustCreate(t, s, "alice", "q")
	mustSend(t, s, "alice", "q", "", "job")

	leased := mustReceive(t, s, "bob", "q", queue.ReceiveOptions{AckTimeout: 1500 * time.Microsecond})
	if leased.Receipt == "" || leased.LeaseExpiresMs != statetest.Start.UnixMilli()+2 {
		t.Fatalf("leased %+v, want a 2 ms lease (rounded up)", leased)
	}
	if _, found, _, _ := s.Peek(ctx, "carol", "q", "", false); found {
		t.Fatal("a leased message is visible")
	}
	wantCode(t, s.Ack(ctx, "carol", "q", leased.Receipt, ""), errs.Conflict)
	wantCode(t, s.Ack(ctx, "bob", "q", "", ""), errs.Invalid)
	wantCode(t, s.Ack(ctx, "bob", "q", "not-a-receipt", ""), errs.Conflict)
	wantCode(t, s.Ack(ctx, "bob", "nope", leased.Receipt, ""), errs.NotFound)

	r.Advance(3 * time.Millisecond)
	if msg, found, _, _ := s.Peek(ctx, "carol", "q", "", false); !found || msg.ID != leased.ID {
		t.Fatalf("after the lapse Peek = (%+v, %v)", msg, found)
	}
	wantCode(t, s.Ack(ctx, "bob", "q", leased.Receipt, ""), errs.Conflict)
	again := mustReceive(t, s, "carol", "q", queue.ReceiveOptions{AckTimeout: time.Second})
	if again.ID != leased.ID || again.Deliveries != 2 {
		t.Fatalf("redelivered %+v", again)
	}
	r.Advance(time.Second) // the lease lasts up to and including its expiry
	if err := s.Ack(ctx, "carol", "q", again.Receipt, ""); err != nil {
		t.Fatalf("Ack in time: %v", err)
	}
	if _, found, _ := s.Receive(ctx, "bob", "q", queue.ReceiveOptions{}, ""); found {
		t.Fatal("an acked message was delivered")
	}
}

func TestService_ListQueues(t *testing.T) {
	ctx := context.Background()
	s, r := newService(t, 4, queue.Config{})
	names := []string{"m", "a", "z", "b.1", "b-2", "c"}
	for _, n := range names {
		mustCreate(t, s, "alice", n)
	}
	mustSend(t, s, "alice", "z", "bob", "x")
	mustSend(t, s, "alice", "a", "", "x")
	mustSend(t, s, "alice", "c", "carol", "x")
	r.StaleMs = 3
	all, staleMs, err := s.ListQueues(ctx, "bob", false, true)
	if err != nil || staleMs != 3 {
		t.Fatalf("ListQueues = (%v, %d, %v)", all, staleMs, err)
	}
	var got []string
	for _, q := range all {
		got = append(got, q.Name)
	}
	if want := slices.Sorted(slices.Values(names)); !slices.Equal(got, want) {
		t.Fatalf("ListQueues = %q, want %q", got, want)
	}
	waiting, _, err := s.ListQueues(ctx, "Bob", true, false)
	if err != nil || len(waiting) != 2 || waiting[0].Name != "a" || waiting[1].Name != "z" || waiting[1].Messages != 1 {
		t.Fatalf("waiting for bob = (%+v, %v)", waiting, err)
	}
	r.SetErr(errs.New(errs.Unavailable, "no quorum"))
	_, _, err = s.ListQueues(ctx, "bob", false, false)
	wantCode(t, err, errs.Unavailable)
}

// TestService_Concurrent sends and receives from many goroutines and wants
// every message received exactly once, per sender in send order.
func TestService_Concurrent(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t, 4, queue.Config{})
	mustCreate(t, s, "alice", "q")
	const senders, each = 4, 50
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			for j := range each {
				mustSend(t, s, fmt.Sprintf("s%d", i), "q", "", fmt.Sprintf("%d/%d", i, j))
			}
		})
	}
	var mu sync.Mutex
	var got []queue.Message
	for range 4 {
		wg.Go(func() {
			for {
				msg, found, err := s.Receive(ctx, "bob", "q", queue.ReceiveOptions{Wait: 200 * time.Millisecond}, "")
				if err != nil {
					t.Error(err)
					return
				}
				if !found {
					return
				}
				mu.Lock()
				got = append(got, msg)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != senders*each {
		t.Fatalf("received %d messages, want %d", len(got), senders*each)
	}
	slices.SortFunc(got, func(a, b queue.Message) int { return int(a.ID) - int(b.ID) })
	next := map[string]int{}
	for i, m := range got {
		if m.ID != uint64(i+1) {
			t.Fatalf("message %d has id %d: lost or duplicated", i, m.ID)
		}
		var sender, seq int
		fmt.Sscanf(string(m.Body), "%d/%d", &sender, &seq)
		if seq != next[m.Sender] {
			t.Fatalf("%s's message %d has id %d after its %d", m.Sender, seq, m.ID, next[m.Sender]-1)
		}
		next[m.Sender]++
	}
}

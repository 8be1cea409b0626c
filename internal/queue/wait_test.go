package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// fakeNotifier records Wait calls and hands them to an inner Notifier. Its
// first `spurious` calls return at once, as a bucketed implementation may.
type fakeNotifier struct {
	inner queue.Notifier

	mu       sync.Mutex
	afters   []uint64
	spurious int
}

func (f *fakeNotifier) Wait(ctx context.Context, q string, after uint64) error {
	f.mu.Lock()
	f.afters = append(f.afters, after)
	spurious := f.spurious > 0
	f.spurious--
	f.mu.Unlock()
	if spurious {
		return nil
	}
	return f.inner.Wait(ctx, q, after)
}

func (f *fakeNotifier) calls() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]uint64(nil), f.afters...)
}

// newWaitService returns a Service whose long polls use a fakeNotifier over
// the replicator (nil: polling).
func newWaitService(t *testing.T, notify bool, spurious int) (*queue.Service, *statetest.Replicator, *fakeNotifier) {
	t.Helper()
	r := newReplicator(2)
	cfg := queue.Config{Now: r.Now, PollMin: 5 * time.Millisecond, PollMax: 20 * time.Millisecond}
	var f *fakeNotifier
	if notify {
		f = &fakeNotifier{inner: r, spurious: spurious}
		cfg.Notifier = f
	}
	s := queue.NewService(r, cfg)
	mustCreate(t, s, "alice", "q")
	return s, r, f
}

type received struct {
	msg   queue.Message
	found bool
	err   error
	took  time.Duration
}

// receiveAsync starts a long-polling Receive.
func receiveAsync(ctx context.Context, s *queue.Service, user string, o queue.ReceiveOptions, idem string) <-chan received {
	ch := make(chan received, 1)
	start := time.Now()
	go func() {
		msg, found, err := s.Receive(ctx, user, "q", o, idem)
		ch <- received{msg, found, err, time.Since(start)}
	}()
	return ch
}

// waitForCalls waits until the notifier has seen n Wait calls.
func waitForCalls(t *testing.T, f *fakeNotifier, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(f.calls()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("notifier saw %d Wait calls, want %d", len(f.calls()), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestService_Receive_WaitNotified(t *testing.T) {
	s, r, f := newWaitService(t, true, 0)
	ch := receiveAsync(context.Background(), s, "bob", queue.ReceiveOptions{Wait: 10 * time.Second}, "")
	waitForCalls(t, f, 1)
	proposes, _ := r.Calls()
	time.Sleep(20 * time.Millisecond) // a busy loop would propose or wait again meanwhile
	if p, _ := r.Calls(); p != proposes || len(f.calls()) != 1 {
		t.Fatalf("while waiting: %d proposals and %d waits, want none", p-proposes, len(f.calls())-1)
	}
	mustSend(t, s, "alice", "q", "carol", "not for bob") // wakes bob, who waits again
	waitForCalls(t, f, 2)
	mustSend(t, s, "alice", "q", "bob", "for bob")
	got := <-ch
	if got.err != nil || !got.found || string(got.msg.Body) != "for bob" {
		t.Fatalf("long poll = %+v", got)
	}
	afters := f.calls()
	if afters[1] <= afters[0] {
		t.Fatalf("waited after %v: the second wait should start after the change", afters)
	}
	// 1 create + 1 empty receive + 2 sends + 1 receive that took the message.
	if p, _ := r.Calls(); p != 5 {
		t.Fatalf("%d proposals, want 5", p)
	}
}

func TestService_Receive_WaitSpurious(t *testing.T) {
	s, r, f := newWaitService(t, true, 3)
	ch := receiveAsync(context.Background(), s, "bob", queue.ReceiveOptions{Wait: 10 * time.Second}, "")
	waitForCalls(t, f, 4) // three spurious returns, then a real wait
	time.Sleep(20 * time.Millisecond)
	if n := len(f.calls()); n != 4 {
		t.Fatalf("%d waits, want 4: spurious wake-ups must not spin", n)
	}
	mustSend(t, s, "alice", "q", "", "hello")
	if got := <-ch; !got.found || string(got.msg.Body) != "hello" {
		t.Fatalf("long poll = %+v", got)
	}
	if p, _ := r.Calls(); p > 1+4+1+1 {
		t.Fatalf("%d proposals: spurious wake-ups should cost at most one each", p)
	}
}

func TestService_Receive_WaitPolling(t *testing.T) {
	s, r, _ := newWaitService(t, false, 0)
	ch := receiveAsync(context.Background(), s, "bob", queue.ReceiveOptions{Wait: 10 * time.Second}, "")
	time.Sleep(100 * time.Millisecond)
	proposes, reads := r.Calls()
	if proposes != 2 || reads > 10 {
		t.Fatalf("polling for 100 ms: %d proposals and %d reads, want 2 and a few backed-off probes", proposes, reads)
	}
	mustSend(t, s, "alice", "q", "", "hello")
	if got := <-ch; !got.found || string(got.msg.Body) != "hello" || got.took > 2*time.Second {
		t.Fatalf("long poll = %+v", got)
	}
}

func TestService_Receive_WaitTimesOut(t *testing.T) {
	for _, notify := range []bool{true, false} {
		s, r, _ := newWaitService(t, notify, 0)
		mustSend(t, s, "alice", "q", "carol", "for carol")
		got := <-receiveAsync(context.Background(), s, "bob", queue.ReceiveOptions{Wait: 60 * time.Millisecond}, "")
		if got.err != nil || got.found || got.took < 60*time.Millisecond {
			t.Fatalf("notify=%v: long poll = %+v, want nothing after the wait", notify, got)
		}
		if p, _ := r.Calls(); p != 3 {
			t.Fatalf("notify=%v: %d proposals, want 3", notify, p)
		}
	}
}

func TestService_Receive_WaitLeaseLapse(t *testing.T) {
	s, r, f := newWaitService(t, true, 0)
	mustSend(t, s, "alice", "q", "", "job")
	leased := mustReceive(t, s, "bob", "q", queue.ReceiveOptions{AckTimeout: 30 * time.Millisecond})
	ch := receiveAsync(context.Background(), s, "carol", queue.ReceiveOptions{Wait: 10 * time.Second}, "")
	waitForCalls(t, f, 1)
	r.Advance(time.Second) // no command: only the lapse timer can wake carol
	got := <-ch
	if !got.found || got.msg.ID != leased.ID || got.msg.Deliveries != 2 {
		t.Fatalf("long poll = %+v, want the lapsed message", got)
	}
}

func TestService_Receive_WaitIdempotent(t *testing.T) {
	s, _, f := newWaitService(t, true, 0)
	ctx := context.Background()
	ch := receiveAsync(ctx, s, "bob", queue.ReceiveOptions{Wait: 10 * time.Second}, "poll-1")
	waitForCalls(t, f, 1)
	mustSend(t, s, "alice", "q", "", "first")
	first := <-ch
	if !first.found {
		t.Fatalf("long poll = %+v", first)
	}
	mustSend(t, s, "alice", "q", "", "second")
	// The retry replays the first poll's attempts: the same message, and
	// "second" stays queued.
	retry := <-receiveAsync(ctx, s, "bob", queue.ReceiveOptions{Wait: 10 * time.Second}, "poll-1")
	if !retry.found || retry.msg.ID != first.msg.ID {
		t.Fatalf("retried long poll = %+v, want %+v", retry, first)
	}
	if msg := mustReceive(t, s, "bob", "q", queue.ReceiveOptions{}); string(msg.Body) != "second" {
		t.Fatalf("then received %q", msg.Body)
	}
}

func TestService_Receive_WaitEnds(t *testing.T) {
	t.Run("context canceled", func(t *testing.T) {
		s, _, f := newWaitService(t, true, 0)
		ctx, cancel := context.WithCancel(context.Background())
		ch := receiveAsync(ctx, s, "bob", queue.ReceiveOptions{Wait: 10 * time.Second}, "")
		waitForCalls(t, f, 1)
		cancel()
		if got := <-ch; got.err == nil || got.found {
			t.Fatalf("canceled long poll = %+v", got)
		}
	})
	t.Run("queue deleted", func(t *testing.T) {
		s, _, f := newWaitService(t, true, 0)
		ch := receiveAsync(context.Background(), s, "bob", queue.ReceiveOptions{Wait: 10 * time.Second}, "")
		waitForCalls(t, f, 1)
		if _, err := s.Delete(context.Background(), "alice", "q", ""); err != nil {
			t.Fatal(err)
		}
		got := <-ch
		wantCode(t, got.err, errs.NotFound)
	})
}

// Closing StopWaiting ends a long poll's wait, with no message and no
// error, on the notifier and on polling alike; a message sent afterwards
// stays in the queue for the next receiver.
func TestService_Receive_StopWaiting(t *testing.T) {
	for _, notify := range []bool{true, false} {
		s, _, f := newWaitService(t, notify, 0)
		stop := make(chan struct{})
		ch := receiveAsync(context.Background(), s, "bob", queue.ReceiveOptions{Wait: 10 * time.Second, AckTimeout: time.Minute, StopWaiting: stop}, "")
		if notify {
			waitForCalls(t, f, 1)
		}
		close(stop)
		got := <-ch
		if got.err != nil || got.found || got.took > 5*time.Second {
			t.Fatalf("notify %v: long poll after stop = %+v, want no message, no error, at once", notify, got)
		}
		mustSend(t, s, "alice", "q", "", "later")
		if m := mustReceive(t, s, "carol", "q", queue.ReceiveOptions{}); string(m.Body) != "later" {
			t.Fatalf("notify %v: the next receiver got %q", notify, m.Body)
		}
	}
}

package partition

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/state"
)

// newTestNotifier returns a notifier whose replicas exist while *present is
// true, with a short recheck.
func newTestNotifier(present *atomic.Bool) *Notifier {
	n := NewNotifier(func(uint64) bool { return present.Load() })
	n.recheck = 20 * time.Millisecond
	return n
}

func qkey(name string) Key { return Key{Domain: queue.Tag, Name: name} }

// waitResult runs Wait on a goroutine and returns its result channel.
func waitResult(n *Notifier, ctx context.Context, p uint64, name string, after uint64) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- n.Wait(ctx, p, qkey(name), after) }()
	return ch
}

func mustBlock(t *testing.T, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("Wait returned %v, want it still waiting", err)
	case <-time.After(50 * time.Millisecond):
	}
}

func mustReturn(t *testing.T, ch <-chan error, want error) {
	t.Helper()
	select {
	case err := <-ch:
		if !errors.Is(err, want) {
			t.Fatalf("Wait = %v, want %v", err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return")
	}
}

func mustClosed(t *testing.T, ch <-chan struct{}, want bool, what string) {
	t.Helper()
	select {
	case <-ch:
		if !want {
			t.Fatalf("%s: woken", what)
		}
	default:
		if want {
			t.Fatalf("%s: not woken", what)
		}
	}
}

func TestNotifier_Wait(t *testing.T) {
	var present atomic.Bool
	present.Store(true)
	// Waits left blocked end with the test.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	t.Run("wakes once the command is durable", func(t *testing.T) {
		n := newTestNotifier(&present)
		ch := waitResult(n, ctx, 1, "jobs", 10)
		mustBlock(t, ch)
		n.record(1, qkey("jobs"), 11)
		mustBlock(t, ch) // applied, not yet reported durable
		n.Applied(1, 10)
		mustBlock(t, ch) // a batch before it
		n.Applied(1, 11)
		mustReturn(t, ch, nil)
		// An index at or after the last command waits again; one before it
		// returns at once.
		mustBlock(t, waitResult(n, ctx, 1, "jobs", 11))
		mustReturn(t, waitResult(n, ctx, 1, "jobs", 10), nil)
	})
	t.Run("partitions are apart", func(t *testing.T) {
		n := newTestNotifier(&present)
		ch := waitResult(n, ctx, 2, "backlog", 5)
		n.record(1, qkey("backlog"), 50)
		n.Applied(1, 50)
		mustBlock(t, ch)
		n.record(2, qkey("backlog"), 6)
		n.Applied(2, 6)
		mustReturn(t, ch, nil)
	})
	t.Run("domains are apart", func(t *testing.T) {
		n := newTestNotifier(&present)
		ch := waitResult(n, ctx, 1, "x", 5)
		n.record(1, Key{Domain: chat.Tag, Name: "x"}, 6) // a room named like the queue
		n.Applied(1, 6)
		mustBlock(t, ch)
	})
	t.Run("pending notes wait for their batch", func(t *testing.T) {
		n := newTestNotifier(&present)
		n.record(1, qkey("jobs"), 3)
		n.record(1, qkey("jobs"), 4)
		n.Applied(1, 3)
		mustBlock(t, waitResult(n, ctx, 1, "jobs", 3))
		n.Applied(1, 4)
		mustReturn(t, waitResult(n, ctx, 1, "jobs", 3), nil)
		if len(n.pending) != 0 {
			t.Fatalf("pending notes left: %v", n.pending)
		}
	})
	t.Run("context ends the wait", func(t *testing.T) {
		n := newTestNotifier(&present)
		cctx, cancel := context.WithCancel(ctx)
		ch := waitResult(n, cctx, 1, "jobs", 0)
		mustBlock(t, ch)
		cancel()
		mustReturn(t, ch, context.Canceled)
		n.mu.Lock()
		defer n.mu.Unlock()
		if len(n.waits) != 0 {
			t.Fatalf("a channel outlived its last waiter: %v", n.waits)
		}
	})
	t.Run("no replica: returns after a recheck, not at once", func(t *testing.T) {
		n := newTestNotifier(&present)
		present.Store(false)
		defer present.Store(true)
		start := time.Now()
		mustReturn(t, waitResult(n, ctx, 1, "jobs", 0), nil)
		if d := time.Since(start); d < n.recheck {
			t.Fatalf("returned after %v, before a recheck (%v)", d, n.recheck)
		}
	})
	t.Run("as the queue Service's Notifier", func(t *testing.T) {
		n := newTestNotifier(&present)
		qn := n.Queues(func(string) uint64 { return 3 })
		ch := make(chan error, 1)
		go func() { ch <- qn.Wait(ctx, "jobs", 1) }()
		mustBlock(t, ch)
		n.record(3, qkey("jobs"), 2)
		n.Applied(3, 2)
		mustReturn(t, ch, nil)
	})
}

func TestNotifier_Changed(t *testing.T) {
	n := NewNotifier(func(uint64) bool { return true })
	room := func(name string) Key { return Key{Domain: chat.Tag, Name: name} }
	ch, done := n.Changed(1, room("r"))
	other, doneOther := n.Changed(1, room("s"))
	defer doneOther()
	n.record(1, room("r"), 10)
	n.record(1, room("r"), 12)
	mustClosed(t, ch, false, "before the entry was reported visible")
	n.Applied(1, 10)
	mustClosed(t, ch, true, "once the entry was visible")
	mustClosed(t, other, false, "another room's waiter")
	done()

	ch2, done2 := n.Changed(1, room("r"))
	n.Applied(2, 12) // another partition
	mustClosed(t, ch2, false, "by another partition's index")
	n.Applied(1, 12)
	mustClosed(t, ch2, true, "by the second entry")
	done2()

	// A waiter that gives up lets its channel go; one still waiting keeps it.
	_, d1 := n.Changed(1, room("t"))
	ch3, d2 := n.Changed(1, room("t"))
	d1()
	d1() // a second call does nothing
	n.record(1, room("t"), 13)
	n.Applied(1, 13)
	mustClosed(t, ch3, true, "the remaining waiter")
	d2()
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.waits) != 1 { // room s
		t.Fatalf("channels kept: %v", n.waits)
	}
}

func TestStateMachine_Notes(t *testing.T) {
	var present atomic.Bool
	present.Store(true)
	n := newTestNotifier(&present)
	m := StateMachine(n)
	w := state.NewMem()
	apply := func(index uint64, cmd []byte) {
		t.Helper()
		if _, err := m.Apply(w, state.Meta{Partition: 1, Index: index, TimeMs: 1000}, cmd); err != nil {
			t.Fatal(err)
		}
	}
	apply(7, queue.EncodeCreate(queue.Create{Queue: "jobs", User: "u"}))
	apply(8, queue.EncodeSend(queue.Send{Queue: "jobs", User: "u", Body: []byte("x")}))
	apply(9, chat.EncodeCreateRoom(chat.CreateRoom{Room: "lobby", Owner: "u", MaxMembers: 3}))
	apply(10, chat.EncodePost(chat.Post{Room: "lobby", User: "u", Text: "hi"}))
	apply(11, kv.EncodePut(kv.Put{Key: "k", Value: []byte("v")}))
	want := []note{{qkey("jobs"), 8}, {Key{chat.Tag, "lobby"}, 10}, {Key{kv.Tag, kv.WatchName}, 11}}
	if got := n.pending[1]; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("notes = %v, want %v", got, want)
	}
	if res, err := m.Apply(w, state.Meta{Partition: 1, Index: 12}, []byte("Zunknown")); err != nil || len(res) == 0 {
		t.Fatalf("unknown domain = %q, %v; want a refusal result", res, err)
	}
	if res, err := StateMachine(nil).Apply(w, state.Meta{Partition: 1, Index: 13}, kv.EncodeDelete(kv.Delete{Key: "k"})); err != nil || len(res) == 0 {
		t.Fatalf("without a notifier = %q, %v", res, err)
	}
}

func TestStateMachine_Domains(t *testing.T) {
	for _, tag := range []byte{'K', 'A', 'C', 'Q', 'L', 'P'} {
		if _, ok := domains[tag]; !ok {
			t.Errorf("no state machine for tag %q", tag)
		}
	}
	if len(domains) != 6 {
		t.Errorf("%d domains, want 6", len(domains))
	}
}

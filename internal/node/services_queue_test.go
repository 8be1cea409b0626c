package node

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/state"
)

// newTestNotifier returns a notifier where queue names starting with 'b'
// live in partition 2 and the rest in partition 1, and replicas exist while
// *present is true.
func newTestNotifier(present *atomic.Bool) *queueNotifier {
	q := newQueueNotifier(func(name string) uint64 {
		if name != "" && name[0] == 'b' {
			return 2
		}
		return 1
	}, func(uint64) bool { return present.Load() })
	q.recheck = 20 * time.Millisecond
	return q
}

// waitResult runs Wait on a goroutine and returns its result channel.
func waitResult(q *queueNotifier, ctx context.Context, name string, after uint64) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- q.Wait(ctx, name, after) }()
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
	case <-time.After(2 * time.Second):
		t.Fatal("Wait did not return")
	}
}

func TestQueueNotifier_Wait(t *testing.T) {
	var present atomic.Bool
	present.Store(true)
	// Waits left blocked end with the test.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	t.Run("wakes once the command is durable", func(t *testing.T) {
		q := newTestNotifier(&present)
		ch := waitResult(q, ctx, "jobs", 10)
		mustBlock(t, ch)
		q.record(1, "jobs", 11)
		mustBlock(t, ch) // applied, not yet reported durable
		q.applied(1, 10)
		mustBlock(t, ch) // a batch before it
		q.applied(1, 11)
		mustReturn(t, ch, nil)
		// An index at or after the last command waits again; one before it
		// returns at once.
		mustBlock(t, waitResult(q, ctx, "jobs", 11))
		mustReturn(t, waitResult(q, ctx, "jobs", 10), nil)
	})
	t.Run("partitions are apart", func(t *testing.T) {
		q := newTestNotifier(&present)
		ch := waitResult(q, ctx, "backlog", 5) // partition 2
		q.record(1, "jobs", 50)
		q.applied(1, 50)
		mustBlock(t, ch)
		q.record(2, "backlog", 6)
		q.applied(2, 6)
		mustReturn(t, ch, nil)
	})
	t.Run("pending notes wait for their batch", func(t *testing.T) {
		q := newTestNotifier(&present)
		q.record(1, "jobs", 3)
		q.record(1, "jobs", 4)
		q.applied(1, 3)
		mustBlock(t, waitResult(q, ctx, "jobs", 3))
		q.applied(1, 4)
		mustReturn(t, waitResult(q, ctx, "jobs", 3), nil)
		if len(q.pending) != 0 {
			t.Fatalf("pending notes left: %v", q.pending)
		}
	})
	t.Run("context ends the wait", func(t *testing.T) {
		q := newTestNotifier(&present)
		cctx, cancel := context.WithCancel(ctx)
		ch := waitResult(q, cctx, "jobs", 0)
		mustBlock(t, ch)
		cancel()
		mustReturn(t, ch, context.Canceled)
	})
	t.Run("no replica: returns after a recheck, not at once", func(t *testing.T) {
		q := newTestNotifier(&present)
		present.Store(false)
		defer present.Store(true)
		start := time.Now()
		mustReturn(t, waitResult(q, ctx, "jobs", 0), nil)
		if d := time.Since(start); d < q.recheck {
			t.Fatalf("returned after %v, before a recheck (%v)", d, q.recheck)
		}
	})
}

func TestNotifyingMux_Apply(t *testing.T) {
	var present atomic.Bool
	present.Store(true)
	q := newTestNotifier(&present)
	m := notifyingMux{mux: partitionMux, notes: q}
	w := state.NewMem()
	meta := state.Meta{Partition: 1, Index: 7, TimeMs: 1000}
	if _, err := m.Apply(w, meta, queue.EncodeCreate(queue.Create{Queue: "jobs", User: "u"})); err != nil {
		t.Fatal(err)
	}
	if len(q.pending[1]) != 0 {
		t.Fatalf("a create was noted: %v", q.pending)
	}
	meta.Index = 8
	if _, err := m.Apply(w, meta, queue.EncodeSend(queue.Send{Queue: "jobs", User: "u", Body: []byte("x")})); err != nil {
		t.Fatal(err)
	}
	if got := q.pending[1]; len(got) != 1 || got[0].index != 8 {
		t.Fatalf("pending after a send = %v", got)
	}
	if res, err := m.Apply(w, meta, []byte("Zunknown")); err != nil || len(res) == 0 {
		t.Fatalf("unknown domain = %q, %v; want a refusal result", res, err)
	}
}

func TestPartitionMux_Domains(t *testing.T) {
	for _, tag := range []byte{'K', 'A', 'C', 'Q', 'L', 'P'} {
		if _, ok := partitionMux[tag]; !ok {
			t.Errorf("no state machine for tag %q", tag)
		}
	}
	if len(partitionMux) != 6 {
		t.Errorf("%d domains, want 6", len(partitionMux))
	}
}

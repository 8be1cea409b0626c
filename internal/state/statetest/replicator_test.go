package statetest_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// stamp is a state machine that stores each command under its own key and
// returns the leader time it was stamped with.
type stamp struct{}

func (stamp) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(meta.TimeMs)), w.Set(cmd, nil)
}

func mustPropose(t *testing.T, r *statetest.Replicator, dedupKey, cmd string) int64 {
	t.Helper()
	res, err := r.Propose(context.Background(), r.PartitionOf(cmd), dedupKey, []byte(cmd))
	if err != nil {
		t.Fatal(err)
	}
	return int64(binary.BigEndian.Uint64(res))
}

func TestReplicator_ClockAndDedup(t *testing.T) {
	r := statetest.NewReplicator(1, stamp{})
	if a, b := mustPropose(t, r, "", "a"), mustPropose(t, r, "k", "b"); a != 1 || b != 2 {
		t.Fatalf("stamps %d, %d; want 1, 2 (a millisecond a proposal from the epoch)", a, b)
	}
	if again := mustPropose(t, r, "k", "b"); again != 2 || r.Applied(1) != 2 {
		t.Fatalf("retry stamped %d with %d applied; want the first result, 2 applied", again, r.Applied(1))
	}
	r.Freeze(statetest.Start)
	r.Advance(5 * time.Millisecond)
	if c, d := mustPropose(t, r, "", "c"), mustPropose(t, r, "", "d"); c != statetest.Start.UnixMilli()+5 || d != c {
		t.Fatalf("frozen stamps %d, %d; want both Start+5", c, d)
	}
	if keys := r.Keys(1); len(keys) != 4 {
		t.Fatalf("keys %q, want a, b, c, d", keys)
	}
	if p, _ := r.Calls(); p != 5 {
		t.Fatalf("%d proposals counted, want 5", p)
	}
}

func TestReplicator_Wait(t *testing.T) {
	r := statetest.NewReplicator(2, stamp{})
	r.NotifyOn(func(cmd []byte) (string, bool) { return string(cmd), cmd[0] == 'q' })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.Wait(ctx, "q1", 0); err == nil {
		t.Fatal("Wait returned before any command")
	}
	done := make(chan error, 1)
	go func() { done <- r.Wait(context.Background(), "q1", 0) }()
	mustPropose(t, r, "", "x") // no key: no wake-up
	mustPropose(t, r, "", "q1")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

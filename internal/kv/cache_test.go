package kv

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/parley-chat/parley/internal/state"
)

// randomCommand returns one of the commands that write keys: mostly on a
// few hot keys, rewritten, deleted, expired and revoked often, and now and
// then on one of many cold keys, whose history outlives Window.
func randomCommand(r *rand.Rand) Command {
	key := func() string {
		if r.IntN(4) == 0 {
			return fmt.Sprintf("cold%d", r.IntN(300))
		}
		return fmt.Sprintf("k%d", r.IntN(12))
	}
	lease := uint64(1<<LeaseShift | (1 + r.IntN(3)))
	keep := uint64(r.IntN(4)) // 0: DefaultHistory
	switch n := r.IntN(20); {
	case n < 9:
		p := Put{Key: key(), Value: []byte(fmt.Sprint(r.IntN(1000))), Keep: keep}
		switch r.IntN(6) {
		case 0:
			p.TTLMs = uint64(20 + r.IntN(200))
		case 1:
			p.Lease = lease
		case 2:
			p.IfVersion = uint64(1 + r.IntN(3))
		case 3:
			p.IfAbsent = true
		}
		return p
	case n < 12:
		return Delete{Key: key(), IfVersion: uint64(r.IntN(2)), Keep: keep}
	case n < 15:
		k := key()
		return Txn{ // the same key written twice at one revision
			Compare: []Compare{{Key: k, Version: uint64(r.IntN(3))}},
			Success: []Op{{Type: OpPut, Key: k, Value: []byte("1")}, {Type: OpPut, Key: k, Value: []byte("2"), TTLMs: 100}},
			Failure: []Op{{Type: OpDelete, Key: k}, {Type: OpPut, Key: key(), Value: []byte("3")}, {Type: OpGet, Key: k}},
			Keep:    keep,
		}
	case n < 17:
		return Expire{Keep: keep}
	case n < 18:
		return Grant{TTLMs: uint64(50 + r.IntN(300))}
	case n < 19:
		return KeepAlive{Lease: lease}
	default:
		return Revoke{Lease: lease, Keep: keep}
	}
}

// TestApplyCache_SameResults applies one stream of commands with and without
// a cache, and wants the same results and states: what the cache remembers
// never changes what Apply does. The small cache evicts all along; the
// full one is complete (it loaded the whole partition). Both are reset now
// and then, as a snapshot would.
func TestApplyCache_SameResults(t *testing.T) {
	for _, budget := range []int{600, cacheBudget} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			plain, cached := state.NewMem(), state.NewMem()
			sm := StateMachine{cache: newApplyCache(budget)}
			for i := range 2500 { // beyond Window, so old history is trimmed too
				cmd := encodeCommand(t, randomCommand(r))
				meta := state.Meta{Partition: 1, Index: uint64(i + 1), TimeMs: int64(10 * i)}
				want, err := StateMachine{}.Apply(plain, meta, cmd)
				if err != nil {
					t.Fatal(err)
				}
				got, err := sm.Apply(cached, meta, cmd)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("command %d %x: result %x with the cache, %x without", i, cmd, got, want)
				}
				if i%700 == 699 {
					sm.Reset()
				}
				if i%250 == 249 {
					mustSameState(t, plain, cached)
				}
			}
			mustSameState(t, plain, cached)
			if complete := sm.cache.complete; complete != (budget == cacheBudget) {
				t.Fatalf("complete = %v with a budget of %d", complete, budget)
			}
		})
	}
}

// TestApplyCache_LogTrim runs a partition's revisions past LogKeep, so that
// writes drop the oldest watch log entries and the history of keys deleted
// by then, with and without a cache.
func TestApplyCache_LogTrim(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	plain, cached := state.NewMem(), state.NewMem()
	sm := NewStateMachine()
	apply := func(i int) {
		cmd := encodeCommand(t, randomCommand(r))
		meta := state.Meta{Partition: 1, Index: uint64(i + 1), TimeMs: int64(10 * i)}
		want, err := StateMachine{}.Apply(plain, meta, cmd)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := sm.Apply(cached, meta, cmd); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("command %d %x: result %x, %v with the cache, %x without", i, cmd, got, err, want)
		}
	}
	for i := range 300 {
		apply(i)
	}
	// Skip ahead: the next revisions are past LogKeep, so they drop the log
	// entries written above, and the history of the keys they deleted that
	// the cache still holds. The revision changed under the cache: tell it.
	for _, m := range []*state.Mem{plain, cached} {
		if err := m.Set([]byte(revisionKey), u64(LogKeep)); err != nil {
			t.Fatal(err)
		}
	}
	sm.cache.rev, sm.cache.revKnown = LogKeep, true
	before := dump(t, plain)
	for i := 300; i < 800; i++ {
		apply(i)
	}
	mustSameState(t, plain, cached)
	if after := dump(t, plain); !bytes.Contains([]byte(before), []byte(`"k!w/\x00\x00\x00\x00\x00\x00\x00\x01"`)) ||
		bytes.Contains([]byte(after), []byte(`"k!w/\x00\x00\x00\x00\x00\x00\x00\x01"`)) {
		t.Fatal("the first watch log entry was not dropped: the test does not reach LogKeep")
	}
}

// TestApplyCache_Evicts keeps a cache within about two budgets.
func TestApplyCache_Evicts(t *testing.T) {
	sm := StateMachine{cache: newApplyCache(2000)}
	mem := state.NewMem()
	for i := range 300 {
		if _, err := sm.Apply(mem, state.Meta{Partition: 1, Index: uint64(i + 1)}, put(fmt.Sprintf("key%d", i), "v")); err != nil {
			t.Fatal(err)
		}
	}
	if n := sm.cache.keys.Len(); n >= 300 || n == 0 {
		t.Fatalf("cache holds %d keys of 300 written, want fewer (evicted) and some", n)
	}
}

func mustSameState(t *testing.T, want, got *state.Mem) {
	t.Helper()
	if w, g := dump(t, want), dump(t, got); w != g {
		t.Fatalf("states differ with the cache:\n%s\nwithout:\n%s", g, w)
	}
}

// TestApplyCache_TxnWritesKeyTwice trims, past Window, the history of a key
// that a transaction wrote twice at one revision: one history entry, counted
// once.
func TestApplyCache_TxnWritesKeyTwice(t *testing.T) {
	plain, cached := state.NewMem(), state.NewMem()
	sm := NewStateMachine()
	i := 0
	apply := func(c Command) {
		t.Helper()
		i++
		cmd, meta := encodeCommand(t, c), state.Meta{Partition: 1, Index: uint64(i), TimeMs: int64(i)}
		want, err := StateMachine{}.Apply(plain, meta, cmd)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := sm.Apply(cached, meta, cmd); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("command %d: result %x, %v with the cache, %x without", i, got, err, want)
		}
	}
	apply(Put{Key: "x", Value: []byte("1")})
	apply(Put{Key: "x", Value: []byte("2")})
	apply(Txn{
		Compare: []Compare{{Key: "x", Version: 2}},
		Success: []Op{{Type: OpPut, Key: "x", Value: []byte("3")}, {Type: OpPut, Key: "x", Value: []byte("4")}},
	})
	for range Window {
		apply(Put{Key: "y", Value: []byte("y"), Keep: 1})
	}
	apply(Put{Key: "x", Value: []byte("5"), Keep: 3})
	mustSameState(t, plain, cached)
}

package storage

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parley-chat/parley/internal/state"
)

// A key set lazily again and again reaches the Pebble batch once, when the
// batch commits; a batch holding only such values is not empty.
func TestStateWriter_SetLatestWritesOnce(t *testing.T) {
	db := mustOpen(t, "a", memOptions())
	g := mustGroup(t, db, 3)
	b := db.NewBatch()
	defer b.Close()
	w := b.State(g)
	for i := range 10 {
		if err := w.SetLatest([]byte("rev"), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.pb.Count(); n != 0 {
		t.Fatalf("the Pebble batch holds %d records before commit, want 0", n)
	}
	if b.Empty() {
		t.Fatal("a batch holding a lazily set value says it is empty")
	}
	if v, ok, err := w.Get([]byte("rev")); err != nil || !ok || v[0] != 9 {
		t.Fatalf("Get = %v, %v, %v; want the last value, 9", v, ok, err)
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	if n := b.pb.Count(); n != 1 {
		t.Fatalf("the committed batch held %d records, want 1", n)
	}
	if got := stateOf(t, db, 3); got["rev"] != "\x09" {
		t.Fatalf("committed state %q, want rev = 9", got)
	}
}

// Whatever mix of Set, SetLatest, Delete, Get and Scan a batch sees, every
// read answers and the committed state ends as with Set alone.
func TestStateWriter_SetLatestReadsAndCommitsAsSet(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			db := mustOpen(t, "a", memOptions())
			g := mustGroup(t, db, 1)
			keys := []string{"a", "b", "c", "d", "e"}
			mustSetState(t, db, g, map[string]string{"b": "old", "d": "old"})
			model := map[string]string{"b": "old", "d": "old"}
			b := db.NewBatch()
			defer b.Close()
			w := b.State(g)
			var _ state.LatestSetter = w
			for op := range 40 {
				k := keys[rng.IntN(len(keys))]
				v := fmt.Sprintf("v%d", op)
				switch rng.IntN(5) {
				case 0:
					must(t, w.Set([]byte(k), []byte(v)))
					model[k] = v
				case 1, 2:
					must(t, w.SetLatest([]byte(k), []byte(v)))
					model[k] = v
				case 3:
					must(t, w.Delete([]byte(k)))
					delete(model, k)
				default:
					lo, hi := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
					var got []string
					must(t, w.Scan([]byte(lo), []byte(hi), func(k, v []byte) bool {
						got = append(got, string(k)+"="+string(v))
						return true
					}))
					var want []string
					for _, mk := range slices.Sorted(maps.Keys(model)) {
						if mk >= lo && mk < hi {
							want = append(want, mk+"="+model[mk])
						}
					}
					if !slices.Equal(got, want) {
						t.Fatalf("op %d: Scan [%s, %s) = %q, want %q", op, lo, hi, got, want)
					}
				}
				gv, ok, err := w.Get([]byte(k))
				if want, wantOK := model[k]; err != nil || ok != wantOK || string(gv) != want {
					t.Fatalf("op %d: Get(%s) = %q, %v, %v; want %q, %v", op, k, gv, ok, err, want, wantOK)
				}
			}
			must(t, b.Commit(false))
			if got := stateOf(t, db, 1); !maps.Equal(got, model) {
				t.Fatalf("committed %q, want %q", got, model)
			}
		})
	}
}

// A snapshot applied in a batch replaces the values stored lazily before
// it, as it replaces what Set wrote.
func TestStateWriter_SnapshotReplacesLatest(t *testing.T) {
	src, g, want := leaderWithState(t)
	snap, err := g.Snapshot()
	must(t, err)
	stream := mustSnapshotData(t, src, 1, 40)
	dst := mustOpen(t, "b", memOptions())
	gb := mustGroup(t, dst, 9)
	p, err := dst.PrepareSnapshot(9, snap.Metadata, bytes.NewReader(stream))
	must(t, err)
	defer p.Close()
	mustWrite(t, dst, func(b *Batch) error {
		if err := b.State(gb).SetLatest([]byte("stale"), []byte("set before the snapshot")); err != nil {
			return err
		}
		return b.ApplySnapshot(gb, p)
	})
	got := stateOf(t, dst, 9)
	if v, ok := got["stale"]; ok {
		t.Fatalf("a value stored lazily before the snapshot survived it: stale = %q", v)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("state after the snapshot holds %d keys, want the snapshot's %d", len(got), len(want))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

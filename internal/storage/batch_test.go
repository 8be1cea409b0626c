package storage

import (
	"errors"
	"reflect"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

func TestBatch_State(t *testing.T) {
	db := mustOpen(t, "a", memOptions())
	g := mustGroup(t, db, 3)
	mustSetState(t, db, g, map[string]string{"a": "committed", "b": "committed", "d": "committed"})
	mustSetState(t, db, mustGroup(t, db, 4), map[string]string{"a": "other group"})

	b := db.NewBatch()
	defer b.Close()
	w := b.State(g)
	if err := w.Set([]byte("c"), []byte("pending")); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := w.Set([]byte("a"), []byte("overwritten")); err != nil {
		t.Fatal(err)
	}

	t.Run("Get sees pending writes", func(t *testing.T) {
		for key, want := range map[string]string{"a": "overwritten", "c": "pending", "d": "committed"} {
			v, ok, err := w.Get([]byte(key))
			if err != nil || !ok || string(v) != want {
				t.Errorf("Get(%q) = %q, %v, %v; want %q", key, v, ok, err, want)
			}
		}
		if v, ok, err := w.Get([]byte("b")); ok || err != nil {
			t.Errorf("Get of a pending delete = %q, %v, %v; want absent", v, ok, err)
		}
	})
	t.Run("Get returns copies", func(t *testing.T) {
		v, _, _ := w.Get([]byte("a"))
		v[0] = 'X'
		if again, _, _ := w.Get([]byte("a")); string(again) != "overwritten" {
			t.Fatalf("modifying a returned value changed the batch: %q", again)
		}
	})
	t.Run("Scan sees pending writes in order", func(t *testing.T) {
		cases := []struct {
			lo, hi string
			nilHi  bool
			want   []string
		}{
			{"", "", true, []string{"a=overwritten", "c=pending", "d=committed"}},
			{"b", "d", false, []string{"c=pending"}},
			{"c", "", true, []string{"c=pending", "d=committed"}},
			{"d", "a", false, nil},
		}
		for _, tc := range cases {
			var hi []byte
			if !tc.nilHi {
				hi = []byte(tc.hi)
			}
			var got []string
			err := w.Scan([]byte(tc.lo), hi, func(k, v []byte) bool {
				got = append(got, string(k)+"="+string(v))
				return true
			})
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Scan(%q, %q) = %v, %v; want %v", tc.lo, tc.hi, got, err, tc.want)
			}
		}
		n := 0
		if err := w.Scan(nil, nil, func(k, v []byte) bool { n++; return false }); err != nil || n != 1 {
			t.Errorf("Scan stopping after one pair visited %d, %v", n, err)
		}
	})
	t.Run("committed readers do not see the batch", func(t *testing.T) {
		want := map[string]string{"a": "committed", "b": "committed", "d": "committed"}
		if got := stateOf(t, db, 3); !reflect.DeepEqual(got, want) {
			t.Fatalf("committed state = %v; want %v", got, want)
		}
	})
	t.Run("commit publishes", func(t *testing.T) {
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"a": "overwritten", "c": "pending", "d": "committed"}
		if got := stateOf(t, db, 3); !reflect.DeepEqual(got, want) {
			t.Fatalf("committed state = %v; want %v", got, want)
		}
		if err := w.Set([]byte("x"), nil); err == nil {
			t.Fatal("Set through a committed batch succeeded")
		}
		if got := stateOf(t, db, 4); !reflect.DeepEqual(got, map[string]string{"a": "other group"}) {
			t.Fatalf("neighbouring group changed: %v", got)
		}
	})
}

func TestBatch_Close(t *testing.T) {
	db := mustOpen(t, "a", memOptions())
	g := mustGroup(t, db, 1)
	b := db.NewBatch()
	if !b.Empty() {
		t.Fatal("new batch is not empty")
	}
	if err := b.Append(g, makeEntries(1, 5, 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.SetHardState(g, raftpb.HardState{Term: 1, Commit: 5}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetApplied(g, AppliedState{Index: 2, Term: 1}); err != nil {
		t.Fatal(err)
	}
	stale := b.State(g)
	if err := stale.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if b.Empty() {
		t.Fatal("batch with writes is empty")
	}
	b.Close()

	if last, _ := g.LastIndex(); last != 0 {
		t.Errorf("LastIndex after an uncommitted batch = %d; want 0", last)
	}
	if hs, _, _ := g.InitialState(); !reflect.DeepEqual(hs, raftpb.HardState{}) {
		t.Errorf("hard state after an uncommitted batch = %v", hs)
	}
	if a := g.Applied(); a.Index != 0 {
		t.Errorf("Applied after an uncommitted batch = %+v", a)
	}
	if ids, err := db.Groups(); err != nil || len(ids) != 0 {
		t.Errorf("Groups after an uncommitted batch = %v, %v", ids, err)
	}
	if got := stateOf(t, db, 1); len(got) != 0 {
		t.Errorf("state after an uncommitted batch = %v", got)
	}
	// A reused batch starts clean.
	b = db.NewBatch()
	defer b.Close()
	if !b.Empty() || b.n != 0 {
		t.Fatal("reused batch is not empty")
	}
	if err := stale.Set([]byte("k"), []byte("v")); err == nil {
		t.Fatal("a state writer of a closed batch wrote into a later batch")
	}
}

func TestBatch_Errors(t *testing.T) {
	db := mustOpen(t, "a", memOptions())
	other := mustOpen(t, "b", memOptions())
	g := mustGroup(t, db, 1)
	mustWrite(t, db, func(b *Batch) error {
		if err := b.Append(g, makeEntries(1, 10, 1)); err != nil {
			return err
		}
		return b.SetApplied(g, AppliedState{Index: 5, Term: 1})
	})
	gap := makeEntries(12, 13, 1)
	holey := append(makeEntries(11, 11, 1), makeEntries(13, 13, 1)...)
	cases := []struct {
		name string
		op   func(b *Batch) error
		is   error
	}{
		{"append leaving a gap", func(b *Batch) error { return b.Append(g, gap) }, nil},
		{"append of non-contiguous entries", func(b *Batch) error { return b.Append(g, holey) }, nil},
		{"compact beyond applied", func(b *Batch) error { return b.Compact(g, 6) }, nil},
		{"compact beyond last", func(b *Batch) error { return b.Compact(g, 11) }, nil},
		{"compact of index 0", func(b *Batch) error { return b.Compact(g, 0) }, raft.ErrCompacted},
		{"group of another database", func(b *Batch) error { return b.Append(mustGroup(t, other, 1), gap) }, nil},
		{"state of a group of another database", func(b *Batch) error { return b.State(mustGroup(t, other, 1)).Set(nil, nil) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := db.NewBatch()
			defer b.Close()
			err := tc.op(b)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("err = %v; want an error (%v)", err, tc.is)
			}
		})
	}
	t.Run("commit twice", func(t *testing.T) {
		b := db.NewBatch()
		defer b.Close()
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(false); err == nil {
			t.Fatal("second Commit succeeded")
		}
		if err := b.SetHardState(g, raftpb.HardState{}); err == nil {
			t.Fatal("write to a committed batch succeeded")
		}
	})
	if last, _ := g.LastIndex(); last != 10 {
		t.Fatalf("failed operations changed LastIndex to %d", last)
	}
}

func TestBatch_Commit(t *testing.T) {
	t.Run("many groups in one round", func(t *testing.T) {
		db := mustOpen(t, "a", memOptions())
		var groups []*GroupStorage
		b := db.NewBatch()
		for id := uint64(1); id <= 20; id++ {
			g := mustGroup(t, db, id)
			groups = append(groups, g)
			for round := uint64(0); round < 3; round++ {
				if err := b.Append(g, makeEntries(round*4+1, round*4+4, round+1)); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.SetApplied(g, AppliedState{Index: 6, Term: 2}); err != nil {
				t.Fatal(err)
			}
			if err := b.Compact(g, 5); err != nil { // reads the term of an entry of this batch
				t.Fatal(err)
			}
			if last, _ := g.LastIndex(); last != 0 {
				t.Fatalf("group %d: LastIndex changed before commit", id)
			}
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		b.Close()
		for _, g := range groups {
			first, _ := g.FirstIndex()
			last, _ := g.LastIndex()
			term, _ := g.Term(5)
			if first != 6 || last != 12 || term != 2 {
				t.Errorf("group %d: first %d, last %d, Term(5) %d; want 6, 12, 2", g.ID(), first, last, term)
			}
		}
	})
	t.Run("applied conf state is copied", func(t *testing.T) {
		db := mustOpen(t, "a", memOptions())
		g := mustGroup(t, db, 1)
		cs := raftpb.ConfState{Voters: []uint64{1, 2, 3}}
		mustWrite(t, db, func(b *Batch) error { return b.SetApplied(g, AppliedState{Index: 1, Term: 1, ConfState: cs}) })
		cs.Voters[0] = 99
		if got := g.Applied().ConfState.Voters; !reflect.DeepEqual(got, []uint64{1, 2, 3}) {
			t.Fatalf("caller's change reached the stored conf state: %v", got)
		}
	})
}

func TestDB_DestroyGroup(t *testing.T) {
	opts := memOptions()
	db := mustOpen(t, "a", opts)
	g, keep := mustGroup(t, db, 1), mustGroup(t, db, 2)
	for _, gs := range []*GroupStorage{g, keep} {
		mustWrite(t, db, func(b *Batch) error {
			if err := b.Append(gs, makeEntries(1, 100, 1)); err != nil {
				return err
			}
			if err := b.SetHardState(gs, raftpb.HardState{Term: 1, Commit: 100}); err != nil {
				return err
			}
			if err := b.SetApplied(gs, AppliedState{Index: 90, Term: 1}); err != nil {
				return err
			}
			if err := b.Compact(gs, 10); err != nil {
				return err
			}
			return b.State(gs).Set([]byte("k"), []byte("v"))
		})
	}
	if _, err := g.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if err := db.DestroyGroup(1, 7); err != nil {
		t.Fatalf("DestroyGroup: %v", err)
	}
	checkEmpty := func(t *testing.T, db *DB, g *GroupStorage) {
		t.Helper()
		first, _ := g.FirstIndex()
		last, _ := g.LastIndex()
		hs, cs, _ := g.InitialState()
		if first != 1 || last != 0 || !reflect.DeepEqual(hs, raftpb.HardState{}) || len(cs.Voters) != 0 || g.Applied().Index != 0 {
			t.Errorf("destroyed group: first %d, last %d, hard state %v, applied %+v", first, last, hs, g.Applied())
		}
		if got := stateOf(t, db, 1); len(got) != 0 {
			t.Errorf("destroyed group state = %v", got)
		}
		if ids, err := db.Groups(); err != nil || !reflect.DeepEqual(ids, []uint64{2}) {
			t.Errorf("Groups = %v, %v; want [2]", ids, err)
		}
		if err := db.SnapshotData(1, 90, nil); !errors.Is(err, ErrNoSnapshot) {
			t.Errorf("SnapshotData of a destroyed group = %v; want ErrNoSnapshot", err)
		}
		if last, _ := mustGroup(t, db, 2).LastIndex(); last != 100 {
			t.Errorf("other group's last index = %d", last)
		}
	}
	checkEmpty(t, db, g)
	if g2 := mustGroup(t, db, 1); g2 != g {
		t.Error("Group after DestroyGroup returned a new *GroupStorage")
	}
	// The destroyed replica id stays, durably, and only grows.
	if err := db.DestroyGroup(1, 5); err != nil {
		t.Fatal(err)
	}
	mustClose(t, db)
	db = mustOpen(t, "a", opts)
	checkEmpty(t, db, mustGroup(t, db, 1))
	for id, want := range map[uint64]uint64{1: 7, 2: 0} {
		if got, err := db.RemovedReplica(id); err != nil || got != want {
			t.Errorf("RemovedReplica(%d) after a restart = %d, %v; want %d", id, got, err, want)
		}
	}
	// Any leftover entry would surface here.
	it, err := db.pdb.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		if k := it.Key(); len(k) > groupPrefixLen && k[1+7] == 1 {
			t.Fatalf("key %x of the destroyed group survived", k)
		}
	}
}

func TestDB_Checksum(t *testing.T) {
	db := mustOpen(t, "a", memOptions())
	pairs := map[string]string{"a": "1", "ab": "", "b": "2"}
	for _, id := range []uint64{1, 2, 3} {
		g := mustGroup(t, db, id)
		mustSetState(t, db, g, pairs)
		mustWrite(t, db, func(b *Batch) error { return b.SetApplied(g, AppliedState{Index: 7, Term: 1}) })
	}
	// Same pairs split differently must not collide: "a"+"b1" vs "ab"+"1".
	mustSetState(t, db, mustGroup(t, db, 3), map[string]string{"a": "", "ab": "1"})
	a1, s1, err1 := db.Checksum(1)
	a2, s2, err2 := db.Checksum(2)
	a3, s3, err3 := db.Checksum(3)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if a1 != 7 || a2 != 7 || a3 != 7 {
		t.Errorf("applied = %d, %d, %d; want 7", a1, a2, a3)
	}
	if s1 != s2 {
		t.Errorf("equal states have different sums %x, %x", s1, s2)
	}
	if s1 == s3 {
		t.Errorf("different states have the same sum %x", s1)
	}
	if a, _, err := db.Checksum(99); err != nil || a != 0 {
		t.Errorf("Checksum of an unknown group = %d, %v", a, err)
	}
}

package storage

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3/raftpb"
)

func TestDB_Reopen(t *testing.T) {
	t.Run("everything is restored", func(t *testing.T) {
		opts := memOptions()
		db := mustOpen(t, "node", opts)
		if _, ok, err := db.LoadNodeRecord(); ok || err != nil {
			t.Fatalf("LoadNodeRecord on a new database = %v, %v; want absent", ok, err)
		}
		if err := db.SaveNodeRecord([]byte("node-1/cluster-9")); err != nil {
			t.Fatal(err)
		}
		cs := raftpb.ConfState{Voters: []uint64{1, 2}, Learners: []uint64{3}}
		hs := raftpb.HardState{Term: 3, Vote: 2, Commit: 25}
		groups := []uint64{42, 3, 1 << 63}
		for _, id := range groups {
			g := mustGroup(t, db, id)
			mustWrite(t, db, func(b *Batch) error {
				if err := b.Append(g, makeEntries(1, 30, 3)); err != nil {
					return err
				}
				if err := b.SetHardState(g, hs); err != nil {
					return err
				}
				if err := b.SetApplied(g, AppliedState{Index: 20, Term: 3, ConfState: cs}); err != nil {
					return err
				}
				if err := b.State(g).Set([]byte("k"), []byte{byte(id)}); err != nil {
					return err
				}
				return b.Compact(g, 15)
			})
		}
		// Only partition state, no raft state: still listed.
		mustSetState(t, db, mustGroup(t, db, 9), map[string]string{"only": "state"})
		mustClose(t, db)

		db = mustOpen(t, "node", opts)
		rec, ok, err := db.LoadNodeRecord()
		if err != nil || !ok || string(rec) != "node-1/cluster-9" {
			t.Fatalf("LoadNodeRecord = %q, %v, %v", rec, ok, err)
		}
		ids, err := db.Groups()
		if want := []uint64{3, 9, 42, 1 << 63}; err != nil || !reflect.DeepEqual(ids, want) {
			t.Fatalf("Groups = %v, %v; want %v", ids, err, want)
		}
		for _, id := range groups {
			g := mustGroup(t, db, id)
			gotHS, gotCS, _ := g.InitialState()
			if !reflect.DeepEqual(gotHS, hs) || !reflect.DeepEqual(gotCS, cs) {
				t.Errorf("group %d: InitialState = %v, %v; want %v, %v", id, gotHS, gotCS, hs, cs)
			}
			if a := g.Applied(); a.Index != 20 || a.Term != 3 || !reflect.DeepEqual(a.ConfState, cs) {
				t.Errorf("group %d: Applied = %+v", id, a)
			}
			first, _ := g.FirstIndex()
			last, _ := g.LastIndex()
			term, err := g.Term(15)
			if first != 16 || last != 30 || term != 3 || err != nil {
				t.Errorf("group %d: first, last, Term(15) = %d, %d, %d, %v; want 16, 30, 3", id, first, last, term, err)
			}
			ents, err := g.Entries(16, 31, 1<<30)
			if err != nil || !reflect.DeepEqual(ents, makeEntries(16, 30, 3)) {
				t.Errorf("group %d: Entries = %d entries, %v", id, len(ents), err)
			}
			if got := stateOf(t, db, id); !reflect.DeepEqual(got, map[string]string{"k": string([]byte{byte(id)})}) {
				t.Errorf("group %d: state = %v", id, got)
			}
		}
	})

	t.Run("synced commits survive a crash", func(t *testing.T) {
		fs := vfs.NewCrashableMem()
		db := mustOpen(t, "node", Options{FS: fs})
		g := mustGroup(t, db, 1)
		b := db.NewBatch()
		if err := b.Append(g, makeEntries(1, 5, 1)); err != nil {
			t.Fatal(err)
		}
		if err := b.SetHardState(g, raftpb.HardState{Term: 1, Commit: 5}); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(true); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if db.SyncCount() != 1 {
			t.Errorf("SyncCount = %d; want 1", db.SyncCount())
		}
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})

		db2 := mustOpen(t, "node", Options{FS: crashed})
		g2 := mustGroup(t, db2, 1)
		last, _ := g2.LastIndex()
		hs, _, _ := g2.InitialState()
		ents, err := g2.Entries(1, 6, 1<<20)
		if last != 5 || hs.Commit != 5 || err != nil || !reflect.DeepEqual(ents, makeEntries(1, 5, 1)) {
			t.Fatalf("after crash: last %d, hard state %v, entries %d, %v", last, hs, len(ents), err)
		}
	})

	t.Run("NoSync never fsyncs", func(t *testing.T) {
		db := mustOpen(t, "node", memOptions())
		if err := db.SaveNodeRecord(bytes.Repeat([]byte{1}, 10)); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, db, func(b *Batch) error { return b.SetHardState(mustGroup(t, db, 1), raftpb.HardState{Term: 1}) })
		if n := db.SyncCount(); n != 0 {
			t.Fatalf("SyncCount = %d; want 0", n)
		}
	})
}

// A node that stopped after the engine's unsynced apply batch was written
// and before the round batch with the hard state was (a failed commit, a
// killed process) has applied entries beyond its saved commit index. They
// are in its log and were committed: the group opens with its commit index
// raised to them, instead of a state Raft refuses to start from.
func TestDB_AppliedAheadOfSavedCommit(t *testing.T) {
	opts := memOptions()
	db := mustOpen(t, "node", opts)
	g := mustGroup(t, db, 7)
	mustWrite(t, db, func(b *Batch) error {
		if err := b.Append(g, makeEntries(1, 10, 2)); err != nil {
			return err
		}
		return b.SetHardState(g, raftpb.HardState{Term: 2, Vote: 1, Commit: 6})
	})
	mustWrite(t, db, func(b *Batch) error { // the apply batch, and no round batch after it
		return b.SetApplied(g, AppliedState{Index: 8, Term: 2})
	})
	mustClose(t, db)

	db = mustOpen(t, "node", opts)
	defer mustClose(t, db)
	hs, _, _ := mustGroup(t, db, 7).InitialState()
	if want := (raftpb.HardState{Term: 2, Vote: 1, Commit: 8}); hs != want {
		t.Fatalf("InitialState = %v, want %v", hs, want)
	}
	for _, c := range []struct{ commit, applied, last, want uint64 }{
		{6, 8, 10, 8},  // applied ahead, in the log: raised
		{9, 8, 10, 9},  // applied behind: as saved
		{6, 12, 10, 6}, // applied beyond the log: left for Raft to report
	} {
		if got := committedAtLeastApplied(c.commit, c.applied, c.last); got != c.want {
			t.Errorf("committedAtLeastApplied(%d, %d, %d) = %d, want %d", c.commit, c.applied, c.last, got, c.want)
		}
	}
}

func TestDB_Group(t *testing.T) {
	db := mustOpen(t, "node", memOptions())
	g1 := mustGroup(t, db, 5)
	if g2 := mustGroup(t, db, 5); g1 != g2 {
		t.Fatal("Group returned a different *GroupStorage for the same id")
	}
	if ids, err := db.Groups(); err != nil || len(ids) != 0 {
		t.Fatalf("Groups after opening a group without writing = %v, %v; want none", ids, err)
	}
	if _, err := g1.Snapshot(); err == nil {
		t.Fatal("Snapshot of a group that applied nothing succeeded")
	}
	mustClose(t, db)
	if _, err := db.Group(6); err != ErrClosed {
		t.Fatalf("Group on a closed DB = %v; want ErrClosed", err)
	}
}

// PebbleStats counts what synced commits wrote to the WAL and their fsyncs.
// Pebble records an fsync's latency after waking its committers, but before
// it syncs again: once the second commit returned, the first is counted.
func TestDB_PebbleStats(t *testing.T) {
	db := mustOpen(t, t.TempDir(), Options{})
	g := mustGroup(t, db, 1)
	before := db.PebbleStats()
	mustWrite(t, db, func(b *Batch) error { return b.Append(g, makeEntries(1, 10, 1)) })
	mustWrite(t, db, func(b *Batch) error { return b.Append(g, makeEntries(11, 20, 1)) })
	after := db.PebbleStats()
	if after.WALBytesWritten <= before.WALBytesWritten || after.WALFsyncs <= before.WALFsyncs {
		t.Fatalf("stats before %+v, after %+v: want more WAL bytes and fsyncs", before, after)
	}
}

package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// mustSnapshotData streams a pinned snapshot into memory.
func mustSnapshotData(t testing.TB, db *DB, group, index uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := db.SnapshotData(group, index, &buf); err != nil {
		t.Fatalf("SnapshotData(%d, %d): %v", group, index, err)
	}
	return buf.Bytes()
}

// leaderWithState returns a database whose group 1 has a log, partition state and applied
// index 40 at term 4.
func leaderWithState(t *testing.T) (*DB, *GroupStorage, map[string]string) {
	t.Helper()
	db := mustOpen(t, "a", memOptions())
	g := mustGroup(t, db, 1)
	state := map[string]string{"": "empty key", "a": "1", "b/c": string(bytes.Repeat([]byte{0}, 5000)), "z\xff": ""}
	mustWrite(t, db, func(b *Batch) error {
		if err := b.Append(g, makeEntries(1, 50, 4)); err != nil {
			return err
		}
		w := b.State(g)
		for k, v := range state {
			if err := w.Set([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		return b.SetApplied(g, AppliedState{Index: 40, Term: 4, ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}})
	})
	// State of a neighbouring group must not leak into the snapshot.
	mustSetState(t, db, mustGroup(t, db, 2), map[string]string{"other": "group"})
	return db, g, state
}

func TestDB_SnapshotRoundTrip(t *testing.T) {
	src, g, state := leaderWithState(t)
	snap, err := g.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if snap.Data != nil || snap.Metadata.Index != 40 || snap.Metadata.Term != 4 {
		t.Fatalf("Snapshot = %+v", snap)
	}
	// Writes after the snapshot must not be part of it.
	mustSetState(t, src, g, map[string]string{"a": "changed", "late": "x"})
	stream := mustSnapshotData(t, src, 1, 40)

	dstOpts := memOptions()
	dst := mustOpen(t, "b", dstOpts)
	gb := mustGroup(t, dst, 9)
	mustWrite(t, dst, func(b *Batch) error {
		if err := b.Append(gb, makeEntries(1, 10, 1)); err != nil {
			return err
		}
		if err := b.SetHardState(gb, raftpb.HardState{Term: 4, Vote: 1, Commit: 3}); err != nil {
			return err
		}
		if err := b.SetApplied(gb, AppliedState{Index: 3, Term: 1}); err != nil {
			return err
		}
		return b.State(gb).Set([]byte("stale"), []byte("gone after snapshot"))
	})

	p, err := dst.PrepareSnapshot(9, snap.Metadata, bytes.NewReader(stream))
	if err != nil {
		t.Fatalf("PrepareSnapshot: %v", err)
	}
	defer p.Close()
	mustWrite(t, dst, func(b *Batch) error { return b.ApplySnapshot(gb, p) })

	check := func(t *testing.T, db *DB, gb *GroupStorage) {
		t.Helper()
		if got := stateOf(t, db, 9); !reflect.DeepEqual(got, state) {
			t.Errorf("state after snapshot = %q; want %q", got, state)
		}
		first, _ := gb.FirstIndex()
		last, _ := gb.LastIndex()
		term, err := gb.Term(40)
		if first != 41 || last != 40 || term != 4 || err != nil {
			t.Errorf("FirstIndex, LastIndex, Term(40) = %d, %d, %d, %v; want 41, 40, 4", first, last, term, err)
		}
		if _, err := gb.Entries(5, 6, 100); !errors.Is(err, raft.ErrCompacted) {
			t.Errorf("Entries of an old entry = %v; want ErrCompacted", err)
		}
		if a := gb.Applied(); a.Index != 40 || a.Term != 4 || !reflect.DeepEqual(a.ConfState.Voters, []uint64{1, 2, 3}) {
			t.Errorf("Applied = %+v", a)
		}
		if hs, _, _ := gb.InitialState(); hs.Vote != 1 {
			t.Errorf("hard state was not kept: %v", hs)
		}
		srcApplied, srcSum, err1 := src.Checksum(1)
		dstApplied, dstSum, err2 := db.Checksum(9)
		if err1 != nil || err2 != nil || dstApplied != 40 || srcApplied != 40 {
			t.Fatalf("Checksum: %v, %v, applied %d, %d", err1, err2, srcApplied, dstApplied)
		}
		if srcSum == dstSum {
			t.Errorf("source changed after the snapshot but checksums agree")
		}
	}
	t.Run("installed", func(t *testing.T) { check(t, dst, gb) })
	t.Run("after reopen", func(t *testing.T) {
		mustClose(t, dst)
		db := mustOpen(t, "b", dstOpts)
		check(t, db, mustGroup(t, db, 9))
	})
	t.Run("out of date", func(t *testing.T) {
		db := mustOpen(t, "c", memOptions())
		gc := mustGroup(t, db, 9)
		mustWrite(t, db, func(b *Batch) error {
			if err := b.Append(gc, makeEntries(1, 50, 4)); err != nil {
				return err
			}
			return b.SetApplied(gc, AppliedState{Index: 45, Term: 4})
		})
		p, err := db.PrepareSnapshot(9, snap.Metadata, bytes.NewReader(stream))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		b := db.NewBatch()
		defer b.Close()
		if err := b.ApplySnapshot(gc, p); !errors.Is(err, raft.ErrSnapOutOfDate) {
			t.Fatalf("ApplySnapshot of an older snapshot = %v; want ErrSnapOutOfDate", err)
		}
		if err := b.ApplySnapshot(mustGroup(t, db, 10), p); err == nil {
			t.Fatal("ApplySnapshot to another group succeeded")
		}
	})
}

func TestDB_PrepareSnapshot(t *testing.T) {
	src, g, _ := leaderWithState(t)
	snap, err := g.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	good := mustSnapshotData(t, src, 1, 40)
	dst := mustOpen(t, "b", memOptions())
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	cases := []struct {
		name   string
		stream []byte
	}{
		{"empty", nil},
		{"magic only", good[:len(streamMagic)]},
		{"truncated in a value", good[:len(good)/2]},
		{"truncated before the checksum", good[:len(good)-4]},
		{"truncated checksum", good[:len(good)-1]},
		{"bit flip in a key", flip(len(streamMagic) + 3)},
		{"bit flip in the checksum", flip(len(good) - 1)},
		{"bad magic", flip(0)},
		{"bit flip in the last value", flip(len(good) - 8)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := dst.PrepareSnapshot(9, snap.Metadata, bytes.NewReader(tc.stream))
			if !errors.Is(err, ErrCorruptSnapshot) {
				if p != nil {
					p.Close()
				}
				t.Fatalf("PrepareSnapshot = %v; want ErrCorruptSnapshot", err)
			}
		})
	}
	t.Run("valid stream on a non-byte reader", func(t *testing.T) {
		p, err := dst.PrepareSnapshot(9, snap.Metadata, io.MultiReader(bytes.NewReader(good)))
		if err != nil {
			t.Fatalf("PrepareSnapshot: %v", err)
		}
		p.Close()
		p.Close() // idempotent
	})
	t.Run("zero metadata", func(t *testing.T) {
		if _, err := dst.PrepareSnapshot(9, raftpb.SnapshotMetadata{}, bytes.NewReader(good)); err == nil {
			t.Fatal("PrepareSnapshot with an empty metadata succeeded")
		}
	})
}

// pinned reports whether a group has a current pin.
func pinned(db *DB, group uint64) bool {
	db.pins.mu.Lock()
	defer db.pins.mu.Unlock()
	return db.pins.pins[group] != nil
}

func TestGroupStorage_Snapshot(t *testing.T) {
	t.Run("nothing applied", func(t *testing.T) {
		db := mustOpen(t, "a", memOptions())
		if _, err := mustGroup(t, db, 1).Snapshot(); !errors.Is(err, raft.ErrSnapshotTemporarilyUnavailable) {
			t.Fatalf("Snapshot = %v; want ErrSnapshotTemporarilyUnavailable", err)
		}
		if err := db.SnapshotData(1, 1, io.Discard); !errors.Is(err, ErrNoSnapshot) {
			t.Fatalf("SnapshotData without a pin = %v; want ErrNoSnapshot", err)
		}
	})
	t.Run("a newer snapshot replaces the pin", func(t *testing.T) {
		db, g, _ := leaderWithState(t)
		if _, err := g.Snapshot(); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, db, func(b *Batch) error { return b.SetApplied(g, AppliedState{Index: 45, Term: 4}) })
		snap, err := g.Snapshot()
		if err != nil || snap.Metadata.Index != 45 {
			t.Fatalf("Snapshot = %v, %v; want index 45", snap.Metadata, err)
		}
		if err := db.SnapshotData(1, 40, io.Discard); !errors.Is(err, ErrNoSnapshot) {
			t.Fatalf("SnapshotData of the replaced pin = %v; want ErrNoSnapshot", err)
		}
		mustSnapshotData(t, db, 1, 45)
		mustSnapshotData(t, db, 1, 45) // a pin serves many streams
	})
	t.Run("an unused pin expires", func(t *testing.T) {
		db, g, _ := leaderWithState(t)
		db.pins.ttl = 20 * time.Millisecond
		if _, err := g.Snapshot(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for pinned(db, 1) {
			if time.Now().After(deadline) {
				t.Fatal("pin never expired")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := db.SnapshotData(1, 40, io.Discard); !errors.Is(err, ErrNoSnapshot) {
			t.Fatalf("SnapshotData of an expired pin = %v; want ErrNoSnapshot", err)
		}
	})
	t.Run("a replaced pin lives until its stream ends", func(t *testing.T) {
		db, g, state := leaderWithState(t)
		if _, err := g.Snapshot(); err != nil {
			t.Fatal(err)
		}
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- db.SnapshotData(1, 40, pw); pw.Close() }()
		// Read one byte so the stream is running, then replace the pin.
		one := make([]byte, 1)
		if _, err := io.ReadFull(pr, one); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, db, func(b *Batch) error {
			if err := b.State(g).Set([]byte("a"), []byte("new")); err != nil {
				return err
			}
			return b.SetApplied(g, AppliedState{Index: 45, Term: 4})
		})
		if _, err := g.Snapshot(); err != nil {
			t.Fatal(err)
		}
		rest, err := io.ReadAll(pr)
		if err != nil || <-done != nil {
			t.Fatalf("stream: %v", err)
		}
		dst := mustOpen(t, "b", memOptions())
		p, err := dst.PrepareSnapshot(1, raftpb.SnapshotMetadata{Index: 40, Term: 4}, bytes.NewReader(append(one, rest...)))
		if err != nil {
			t.Fatalf("PrepareSnapshot: %v", err)
		}
		defer p.Close()
		mustWrite(t, dst, func(b *Batch) error { return b.ApplySnapshot(mustGroup(t, dst, 1), p) })
		if got := stateOf(t, dst, 1); !reflect.DeepEqual(got, state) {
			t.Fatalf("streamed state = %q; want the state at index 40", got)
		}
	})
	t.Run("streams run concurrently with the driver", func(t *testing.T) {
		db, g, _ := leaderWithState(t)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					idx := g.Applied().Index
					if err := db.SnapshotData(1, idx, io.Discard); err != nil && !errors.Is(err, ErrNoSnapshot) {
						t.Errorf("SnapshotData: %v", err)
					}
					if _, _, err := db.Checksum(1); err != nil {
						t.Errorf("Checksum: %v", err)
					}
					if _, _, err := db.State(1).Get([]byte("a")); err != nil {
						t.Errorf("Get: %v", err)
					}
				}
			})
		}
		for i := uint64(41); i <= 50; i++ {
			mustWrite(t, db, func(b *Batch) error {
				if err := b.State(g).Set([]byte("a"), []byte(fmt.Sprint(i))); err != nil {
					return err
				}
				return b.SetApplied(g, AppliedState{Index: i, Term: 4})
			})
			if _, err := g.Snapshot(); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		wg.Wait()
	})
}

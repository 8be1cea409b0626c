package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// contract drives raft.MemoryStorage (the reference) and a GroupStorage through the same
// operations and compares every raft.Storage method after each step.
type contract struct {
	t    *testing.T
	opts Options
	db   *DB
	g    *GroupStorage
	ms   *raft.MemoryStorage
	// cache bounds applied to every (re)opened database
	cacheEntries int
	cacheBytes   uint64
	// held are results of earlier Entries calls with a deep copy of what they held: the
	// storage must never change entries it handed out.
	held []heldEntries
}

type heldEntries struct{ got, want []raftpb.Entry }

// deepCopy copies entries including their payloads.
func deepCopy(ents []raftpb.Entry) []raftpb.Entry {
	out := make([]raftpb.Entry, len(ents))
	for i, e := range ents {
		out[i] = e
		if e.Data != nil {
			out[i].Data = append([]byte{}, e.Data...)
		}
	}
	return out
}

func newContract(t *testing.T, cacheEntries int, cacheBytes uint64) *contract {
	c := &contract{t: t, opts: memOptions(), ms: raft.NewMemoryStorage(), cacheEntries: cacheEntries, cacheBytes: cacheBytes}
	c.reopen(false)
	return c
}

// reopen opens the database (closing the current one first if close is set).
func (c *contract) reopen(close bool) {
	c.t.Helper()
	if close {
		mustClose(c.t, c.db)
	}
	c.db = mustOpen(c.t, "db", c.opts)
	c.db.cacheEntries, c.db.cacheBytes = c.cacheEntries, c.cacheBytes
	c.g = mustGroup(c.t, c.db, 7)
}

func (c *contract) write(fn func(b *Batch) error) {
	c.t.Helper()
	mustWrite(c.t, c.db, fn)
}

func (c *contract) append(ents []raftpb.Entry) {
	c.t.Helper()
	if err := c.ms.Append(ents); err != nil {
		c.t.Fatalf("MemoryStorage.Append: %v", err)
	}
	c.write(func(b *Batch) error { return b.Append(c.g, ents) })
}

func (c *contract) setHardState(hs raftpb.HardState) {
	c.t.Helper()
	if err := c.ms.SetHardState(hs); err != nil {
		c.t.Fatal(err)
	}
	c.write(func(b *Batch) error { return b.SetHardState(c.g, hs) })
}

// applyAndCompact marks applied (with a conf state) and compacts, in one batch.
func (c *contract) applyAndCompact(applied, compact uint64, cs raftpb.ConfState) {
	c.t.Helper()
	term, err := c.ms.Term(applied)
	if err != nil {
		c.t.Fatalf("MemoryStorage.Term(%d): %v", applied, err)
	}
	if _, err := c.ms.CreateSnapshot(applied, &cs, nil); err != nil {
		c.t.Fatalf("CreateSnapshot(%d): %v", applied, err)
	}
	if err := c.ms.Compact(compact); err != nil {
		c.t.Fatalf("MemoryStorage.Compact(%d): %v", compact, err)
	}
	c.write(func(b *Batch) error {
		if err := b.SetApplied(c.g, AppliedState{Index: applied, Term: term, ConfState: cs}); err != nil {
			return err
		}
		return b.Compact(c.g, compact)
	})
}

// applySnapshot installs an empty-state snapshot in both storages.
func (c *contract) applySnapshot(meta raftpb.SnapshotMetadata) {
	c.t.Helper()
	if err := c.ms.ApplySnapshot(raftpb.Snapshot{Metadata: meta}); err != nil {
		c.t.Fatalf("MemoryStorage.ApplySnapshot: %v", err)
	}
	var stream bytes.Buffer
	sw, err := newStreamWriter(&stream)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := sw.finish(); err != nil {
		c.t.Fatal(err)
	}
	p, err := c.db.PrepareSnapshot(c.g.ID(), meta, &stream)
	if err != nil {
		c.t.Fatalf("PrepareSnapshot: %v", err)
	}
	defer p.Close()
	c.write(func(b *Batch) error { return b.ApplySnapshot(c.g, p) })
}

// check compares every raft.Storage method of both storages.
func (c *contract) check(step string) {
	c.t.Helper()
	t, ms, g := c.t, c.ms, c.g
	wantFirst, _ := ms.FirstIndex()
	wantLast, _ := ms.LastIndex()
	first, _ := g.FirstIndex()
	last, _ := g.LastIndex()
	if first != wantFirst || last != wantLast {
		t.Fatalf("%s: FirstIndex, LastIndex = %d, %d; want %d, %d", step, first, last, wantFirst, wantLast)
	}
	for _, h := range c.held {
		if !reflect.DeepEqual(h.got, h.want) {
			t.Fatalf("%s: entries returned earlier were modified", step)
		}
	}
	wantHS, wantCS, _ := ms.InitialState()
	hs, cs, err := g.InitialState()
	if err != nil || !reflect.DeepEqual(hs, wantHS) || cs.Equivalent(wantCS) != nil {
		t.Fatalf("%s: InitialState = %v, %v, %v; want %v, %v", step, hs, cs, err, wantHS, wantCS)
	}
	for i := uint64(0); i <= wantLast+2; i++ {
		wantTerm, wantErr := ms.Term(i)
		term, err := g.Term(i)
		if term != wantTerm || !sameErr(err, wantErr) {
			t.Fatalf("%s: Term(%d) = %d, %v; want %d, %v", step, i, term, err, wantTerm, wantErr)
		}
	}
	for lo := max(wantFirst, 1) - 1; lo <= wantLast+1; lo++ {
		for hi := lo; hi <= wantLast+1; hi++ {
			if hi > lo+12 && hi != wantLast+1 {
				continue
			}
			for _, maxSize := range []uint64{0, 150, 700, math.MaxUint64} {
				c.checkEntries(step, lo, hi, maxSize)
			}
		}
	}
	if wantSnap, _ := ms.Snapshot(); wantSnap.Metadata.Index > 0 && g.Applied().Index == wantSnap.Metadata.Index {
		snap, err := g.Snapshot()
		if err != nil || snap.Data != nil || snap.Metadata.Index != wantSnap.Metadata.Index ||
			snap.Metadata.Term != wantSnap.Metadata.Term || snap.Metadata.ConfState.Equivalent(wantSnap.Metadata.ConfState) != nil {
			t.Fatalf("%s: Snapshot = %v, %v; want %v", step, snap.Metadata, err, wantSnap.Metadata)
		}
	}
}

func (c *contract) checkEntries(step string, lo, hi, maxSize uint64) {
	c.t.Helper()
	want, wantErr := c.ms.Entries(lo, hi, maxSize)
	got, err := c.g.Entries(lo, hi, maxSize)
	if !sameErr(err, wantErr) || len(got) != len(want) {
		c.t.Fatalf("%s: Entries(%d, %d, %d) = %d entries, %v; want %d, %v", step, lo, hi, maxSize, len(got), err, len(want), wantErr)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			c.t.Fatalf("%s: Entries(%d, %d, %d)[%d] = %+v; want %+v", step, lo, hi, maxSize, i, got[i], want[i])
		}
	}
	if maxSize == math.MaxUint64 && len(got) > 0 {
		c.held = append(c.held, heldEntries{got: got, want: deepCopy(got)})
	}
	if len(got) > 0 && cap(got) != len(got) {
		// Appending to the result must never write into storage-owned memory.
		got = append(got, raftpb.Entry{})
		if again, _ := c.g.Entries(lo, hi, maxSize); len(again) > 0 && reflect.DeepEqual(again[len(again)-1], raftpb.Entry{}) {
			c.t.Fatalf("%s: appending to Entries result corrupted the cache", step)
		}
	}
}

// sameErr reports whether err and want are both nil or both the same raft sentinel.
func sameErr(err, want error) bool {
	if want == nil || err == nil {
		return want == nil && err == nil
	}
	return errors.Is(err, want)
}

func TestGroupStorage_Contract(t *testing.T) {
	cases := []struct {
		name    string
		entries int
		bytes   uint64
	}{
		{"default cache", defaultCacheEntries, defaultCacheBytes},
		{"tiny cache", 3, 400},
		{"no cache", 0, 0},
	}
	voters := raftpb.ConfState{Voters: []uint64{1, 2, 3}}
	joint := raftpb.ConfState{Voters: []uint64{1, 2, 4}, VotersOutgoing: []uint64{1, 2, 3}, Learners: []uint64{5}, AutoLeave: true}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newContract(t, tc.entries, tc.bytes)
			c.check("empty")

			c.append(makeEntries(1, 10, 1))
			c.check("append 1..10")

			c.append(makeEntries(5, 7, 2))
			c.check("conflicting suffix 5..7")
			c.reopen(true)
			c.check("reopen after conflicting suffix")
			c.append(makeEntries(8, 10, 1))
			c.append(makeEntries(6, 7, 2))
			c.check("conflicting suffix on a warm cache")

			c.append(makeEntries(3, 4, 1))
			c.check("rewrite of 3..4 truncating 5..7")

			c.append(makeEntries(5, 30, 2))
			c.setHardState(raftpb.HardState{Term: 2, Vote: 1, Commit: 20})
			c.check("append 5..30 and hard state")

			c.applyAndCompact(12, 10, voters)
			c.check("applied 12, compacted 10")

			c.write(func(b *Batch) error {
				if err := b.Compact(c.g, 9); !errors.Is(err, raft.ErrCompacted) {
					return fmt.Errorf("Compact(9) = %v; want ErrCompacted", err)
				}
				if err := c.ms.Compact(9); !errors.Is(err, raft.ErrCompacted) {
					return fmt.Errorf("MemoryStorage.Compact(9) = %v", err)
				}
				return nil
			})

			c.append(makeEntries(8, 40, 3)) // the compacted prefix is skipped
			// Raft commits before it applies (an applied index ahead of the
			// saved commit is raised on reopen: TestDB_AppliedAheadOfSavedCommit).
			c.setHardState(raftpb.HardState{Term: 3, Vote: 1, Commit: 35})
			c.applyAndCompact(35, 35, joint)
			c.check("append over the compacted prefix, applied and compacted 35")

			c.reopen(true)
			c.check("reopen")

			c.append(makeEntries(36, 120, 4))
			c.append(makeEntries(37, 38, 5)) // long conflicting suffix: range deletion
			c.check("long conflicting suffix")
			c.reopen(true)
			c.check("reopen after long conflicting suffix")

			c.applySnapshot(raftpb.SnapshotMetadata{Index: 200, Term: 7, ConfState: joint})
			c.check("snapshot at 200")

			c.append(makeEntries(201, 210, 7))
			c.setHardState(raftpb.HardState{Term: 7, Vote: 2, Commit: 210})
			c.check("append after snapshot")

			c.applyAndCompact(210, 210, voters)
			c.check("everything compacted")

			c.reopen(true)
			c.check("reopen with an empty log")
		})
	}
}

package storage

import (
	"bytes"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3/raftpb"
)

// memOptions returns options for a fast in-memory database.
func memOptions() Options {
	return Options{NoSync: true, FS: vfs.NewMem(), CacheSize: 8 << 20}
}

// mustOpen opens a database and closes it when the test ends (unless the test closed it).
func mustOpen(t testing.TB, dir string, opts Options) *DB {
	t.Helper()
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	t.Cleanup(func() {
		if !db.closed.Load() {
			if err := db.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	})
	return db
}

// mustClose closes db.
func mustClose(t testing.TB, db *DB) {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// mustGroup opens a group.
func mustGroup(t testing.TB, db *DB, id uint64) *GroupStorage {
	t.Helper()
	g, err := db.Group(id)
	if err != nil {
		t.Fatalf("Group(%d): %v", id, err)
	}
	return g
}

// mustWrite runs fn on a new batch and commits it.
func mustWrite(t testing.TB, db *DB, fn func(b *Batch) error) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	if err := fn(b); err != nil {
		t.Fatalf("batch: %v", err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// makeEntries returns entries [lo, hi] of the given term with varied payloads, including
// nil and empty ones.
func makeEntries(lo, hi, term uint64) []raftpb.Entry {
	var ents []raftpb.Entry
	for i := lo; i <= hi; i++ {
		e := raftpb.Entry{Index: i, Term: term, Type: raftpb.EntryNormal}
		switch i % 5 {
		case 0:
			// nil payload
		case 1:
			e.Data = []byte{}
		default:
			e.Data = bytes.Repeat([]byte{byte(i)}, int(i*37%200))
		}
		ents = append(ents, e)
	}
	return ents
}

// stateOf returns a group's committed partition state as a map.
func stateOf(t testing.TB, db *DB, group uint64) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := db.State(group).Scan(nil, nil, func(k, v []byte) bool {
		m[string(k)] = string(v)
		return true
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return m
}

// mustSetState writes pairs into a group's state in a committed batch.
func mustSetState(t testing.TB, db *DB, g *GroupStorage, pairs map[string]string) {
	t.Helper()
	mustWrite(t, db, func(b *Batch) error {
		w := b.State(g)
		for k, v := range pairs {
			if err := w.Set([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
}

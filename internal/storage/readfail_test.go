package storage

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// eioReads is an in-memory file system whose reads fail with EIO once fail
// is set, as a dying disk's do.
type eioReads struct {
	vfs.FS
	fail *atomic.Bool
}

func (d eioReads) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := d.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	return eioReadFile{f, d.fail}, nil
}

// Unwrap implements vfs.FS.
func (d eioReads) Unwrap() vfs.FS { return d.FS }

type eioReadFile struct {
	vfs.File
	fail *atomic.Bool
}

func (f eioReadFile) ReadAt(p []byte, off int64) (int, error) {
	if f.fail.Load() {
		return 0, syscall.EIO
	}
	return f.File.ReadAt(p, off)
}

// A read of the store's tables that fails with EIO returns an error — never
// "absent" or a short scan — and fails the store: every later commit
// returns ErrFailed, as after a failed fsync.
func TestDB_ReadErrorFailsTheStore(t *testing.T) {
	var fail atomic.Bool
	opts := memOptions()
	opts.FS = eioReads{FS: opts.FS, fail: &fail}
	db := mustOpen(t, "db", opts)
	g := mustGroup(t, db, 1)
	pairs := map[string]string{}
	for i := range 100 {
		pairs[fmt.Sprintf("k%03d", i)] = "v"
	}
	mustSetState(t, db, g, pairs)
	if err := db.pdb.Flush(); err != nil { // into a table, read from now on
		t.Fatal(err)
	}
	mustClose(t, db)
	db = mustOpen(t, "db", opts) // cold caches
	g = mustGroup(t, db, 1)
	fail.Store(true)

	v, ok, err := db.State(1).Get([]byte("k050"))
	if err == nil {
		t.Fatalf("get with failing reads = %q, %v, want an error", v, ok)
	}
	n := 0
	err = db.State(1).Scan(nil, nil, func(k, v []byte) bool { n++; return true })
	if err == nil {
		t.Fatalf("scan with failing reads saw %d keys and no error", n)
	}
	if !errors.Is(db.Failed(), ErrFailed) || !errors.Is(db.Failed(), syscall.EIO) {
		t.Fatalf("Failed() = %v, want ErrFailed wrapping EIO", db.Failed())
	}
	fail.Store(false)
	b := db.NewBatch()
	defer b.Close()
	if err := b.State(g).Set([]byte("after"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); !errors.Is(err, ErrFailed) {
		t.Fatalf("commit after a failed read: %v, want ErrFailed", err)
	}
	if err := db.Close(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Close = %v, want ErrFailed", err)
	}
}

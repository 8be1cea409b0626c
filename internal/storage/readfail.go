package storage

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A read the disk fails (EIO) means the medium can no longer be trusted: a
// table, a log or the manifest may be unreadable in part, and Pebble
// reports such errors only to whoever read (a request, a compaction in the
// background, the Raft log, whose reader panics on an error it does not
// know). Rather than serve around the hole, the store fails as on a failed
// fsync (ErrFailed): every later commit fails, the engine stops, the node
// exits and an operator restarts it once the disk is sound — it then
// catches up from its peers like any restarted node. The read itself
// returns its error, so no caller ever takes an unreadable value for an
// absent one (a request gets a 500, never a 404 or an empty list).

// readCheckFS wraps Pebble's file system: the files it opens report a read
// that fails with EIO to fail.
type readCheckFS struct {
	vfs.FS
	fail func(error)
}

// Unwrap implements vfs.FS.
func (f readCheckFS) Unwrap() vfs.FS { return f.FS }

// Open implements vfs.FS.
func (f readCheckFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	return readCheckFile{File: file, name: name, fail: f.fail}, nil
}

// readCheckFile is a file opened for reading whose reads are checked.
type readCheckFile struct {
	vfs.File
	name string
	fail func(error)
}

// Read implements vfs.File.
func (f readCheckFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.check(err)
	return n, err
}

// ReadAt implements vfs.File.
func (f readCheckFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.check(err)
	return n, err
}

// check fails the store when err is an I/O error of the disk.
func (f readCheckFile) check(err error) {
	if err != nil && errors.Is(err, syscall.EIO) {
		f.fail(fmt.Errorf("read %s: %w", f.name, err))
	}
}

// failRead fails the store after a read of its files failed.
func (db *DB) failRead(err error) {
	err = fmt.Errorf("%w: %w", ErrFailed, err)
	db.failed.CompareAndSwap(nil, &err)
}

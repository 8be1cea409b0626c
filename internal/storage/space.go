package storage

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultMinFreeBytes is the free space below which CheckSpace reports ErrDiskFull: room left
// for what is already in flight (Raft entries of followers, flushes, compactions) after new
// writes are refused.
const DefaultMinFreeBytes = 64 << 20

// spaceCheckEvery bounds how often CheckSpace asks the file system (a statfs call).
const spaceCheckEvery = 100 * time.Millisecond

// ErrDiskFull is returned by CheckSpace while the disk holding the database is (nearly) full.
var ErrDiskFull = errors.New("storage: the disk is full")

// spaceGuard caches the answer of the file system's free-space query.
type spaceGuard struct {
	fs      vfs.FS
	dir     string
	minFree uint64
	next    atomic.Int64 // Unix ns of the next query
	avail   atomic.Int64 // bytes available at the last query; -1 when unknown
}

func newSpaceGuard(fs vfs.FS, dir string, minFree uint64) *spaceGuard {
	if fs == nil {
		fs = vfs.Default
	}
	if minFree == 0 {
		minFree = DefaultMinFreeBytes
	}
	g := &spaceGuard{fs: fs, dir: dir, minFree: minFree}
	g.avail.Store(-1)
	return g
}

// CheckSpace returns ErrDiskFull (wrapped, with the bytes left) when the file system holding
// the database has less than the reserve (Options.MinFreeBytes) available, so that callers
// refuse new writes before Pebble meets ENOSPC: Pebble cannot survive a failed WAL write (its
// commit pipeline panics), so a full disk must be avoided, not handled. File systems that
// cannot tell their free space never report full. The answer is at most 100 ms old.
func (db *DB) CheckSpace() error {
	g := db.space
	now := time.Now().UnixNano()
	if next := g.next.Load(); now >= next && g.next.CompareAndSwap(next, now+int64(spaceCheckEvery)) {
		if u, err := g.fs.GetDiskUsage(g.dir); err == nil {
			g.avail.Store(int64(min(u.AvailBytes, 1<<62)))
		} else {
			g.avail.Store(-1)
		}
	}
	if avail := g.avail.Load(); avail >= 0 && uint64(avail) < g.minFree {
		return fmt.Errorf("%w: %d bytes left, %d reserved", ErrDiskFull, avail, g.minFree)
	}
	return nil
}

package storage

import (
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// CheckSpace reports a full disk once free space drops under the reserve,
// and stops once space is freed; a file system that cannot tell its free
// space is never full.
func TestDB_CheckSpace(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "db", Options{FS: fs, MinFreeBytes: 1 << 20})
	defer mustClose(t, db)
	if err := db.CheckSpace(); err != nil {
		t.Fatalf("a file system without usage figures: %v", err)
	}
	waitSpace := func(full bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for (db.CheckSpace() != nil) != full {
			if time.Now().After(deadline) {
				t.Fatalf("CheckSpace never reported full=%v", full)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1<<20 - 1, TotalBytes: 1 << 30})
	waitSpace(true)
	if err := db.CheckSpace(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("CheckSpace = %v, want ErrDiskFull", err)
	}
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 20, TotalBytes: 1 << 30})
	waitSpace(false)
}

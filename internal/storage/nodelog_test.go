package storage

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// newest returns every record of l, newest first.
func newest(t *testing.T, l *NodeLog) []string {
	t.Helper()
	var out []string
	if err := l.Newest(func(rec []byte) bool {
		out = append(out, string(rec))
		return true
	}); err != nil {
		t.Fatalf("Newest: %v", err)
	}
	return out
}

func mustNodeLog(t *testing.T, db *DB, id byte, keep int) *NodeLog {
	t.Helper()
	l, err := db.OpenNodeLog(id, keep)
	if err != nil {
		t.Fatalf("OpenNodeLog(%d, %d): %v", id, keep, err)
	}
	return l
}

func mustAppend(t *testing.T, l *NodeLog, recs ...string) {
	t.Helper()
	var bs [][]byte
	for _, r := range recs {
		bs = append(bs, []byte(r))
	}
	if err := l.Append(bs); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func TestNodeLog_Append(t *testing.T) {
	t.Run("newest first, bounded", func(t *testing.T) {
		db := mustOpen(t, "node", memOptions())
		l := mustNodeLog(t, db, NodeLogAudit, 3)
		mustAppend(t, l, "a", "b")
		mustAppend(t, l, "c", "d")
		mustAppend(t, l)
		if got, want := newest(t, l), []string{"d", "c", "b"}; !slices.Equal(got, want) {
			t.Fatalf("records = %q, want %q", got, want)
		}
		if l.Len() != 3 {
			t.Fatalf("Len = %d, want 3", l.Len())
		}
		mustAppend(t, l, "e", "f", "g", "h")
		if got, want := newest(t, l), []string{"h", "g", "f"}; !slices.Equal(got, want) {
			t.Fatalf("records = %q, want %q", got, want)
		}
	})
	t.Run("stop early", func(t *testing.T) {
		db := mustOpen(t, "node", memOptions())
		l := mustNodeLog(t, db, NodeLogAudit, 10)
		mustAppend(t, l, "a", "b", "c")
		var got []string
		if err := l.Newest(func(rec []byte) bool {
			got = append(got, string(rec))
			return len(got) < 2
		}); err != nil || !slices.Equal(got, []string{"c", "b"}) {
			t.Fatalf("Newest = %q, %v", got, err)
		}
	})
	t.Run("apart from groups and other logs", func(t *testing.T) {
		db := mustOpen(t, "node", memOptions())
		mustSetState(t, db, mustGroup(t, db, 4), map[string]string{"k": "v"})
		a := mustNodeLog(t, db, NodeLogAudit, 10)
		b := mustNodeLog(t, db, NodeLogAudit+1, 10)
		mustAppend(t, a, "a1")
		mustAppend(t, b, "b1")
		if err := db.DestroyGroup(4, 9); err != nil {
			t.Fatal(err)
		}
		if got := newest(t, a); !slices.Equal(got, []string{"a1"}) {
			t.Fatalf("log a = %q", got)
		}
		if ids, err := db.Groups(); err != nil || len(ids) != 0 {
			t.Fatalf("Groups = %v, %v; a node log is no group", ids, err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		db := mustOpen(t, "node", memOptions())
		l := mustNodeLog(t, db, NodeLogAudit, 10)
		mustClose(t, db)
		if err := l.Append([][]byte{[]byte("x")}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Append after Close = %v, want ErrClosed", err)
		}
		if err := l.Newest(func([]byte) bool { return true }); !errors.Is(err, ErrClosed) {
			t.Fatalf("Newest after Close = %v, want ErrClosed", err)
		}
	})
	t.Run("disk full", func(t *testing.T) {
		fs := vfs.NewMem()
		db := mustOpen(t, "node", Options{NoSync: true, FS: fs, MinFreeBytes: 1 << 20})
		l := mustNodeLog(t, db, NodeLogAudit, 10)
		fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 10, TotalBytes: 1 << 30})
		deadline := time.Now().Add(10 * time.Second)
		for db.CheckSpace() == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if err := l.Append([][]byte{[]byte("x")}); !errors.Is(err, ErrDiskFull) {
			t.Fatalf("Append on a full disk = %v, want ErrDiskFull", err)
		}
		if got := newest(t, l); len(got) != 0 || l.Len() != 0 {
			t.Fatalf("a refused append wrote %q", got)
		}
	})
	t.Run("bad bound", func(t *testing.T) {
		db := mustOpen(t, "node", memOptions())
		if _, err := db.OpenNodeLog(NodeLogAudit, 0); err == nil {
			t.Fatal("OpenNodeLog with bound 0 succeeded")
		}
	})
}

func TestNodeLog_Reopen(t *testing.T) {
	opts := memOptions()
	db := mustOpen(t, "node", opts)
	l := mustNodeLog(t, db, NodeLogAudit, 5)
	for i := range 7 {
		mustAppend(t, l, fmt.Sprint(i))
	}
	mustClose(t, db)

	db = mustOpen(t, "node", opts)
	l = mustNodeLog(t, db, NodeLogAudit, 5)
	if got, want := newest(t, l), []string{"6", "5", "4", "3", "2"}; !slices.Equal(got, want) {
		t.Fatalf("after reopen = %q, want %q", got, want)
	}
	mustAppend(t, l, "7")
	if got, want := newest(t, l), []string{"7", "6", "5", "4", "3"}; !slices.Equal(got, want) {
		t.Fatalf("append after reopen = %q, want %q", got, want)
	}
}

package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// flipBitInTable flips one bit in the middle of dir's largest table file,
// as a disk's bit rot would, and returns the file's name.
func flipBitInTable(t *testing.T, fs vfs.FS, dir string) string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var size int64
	for _, n := range names {
		if !strings.HasSuffix(n, ".sst") {
			continue
		}
		st, err := fs.Stat(fs.PathJoin(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > size {
			name, size = n, st.Size()
		}
	}
	if name == "" {
		t.Fatalf("no table file in %s: %v", dir, names)
	}
	path := fs.PathJoin(dir, name)
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)*2/3] ^= 0x10
	w, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestDB_ScrubQuarantinesAFlippedBit(t *testing.T) {
	defer func(n int) { scrubChunk = n }(scrubChunk)
	scrubChunk = 100 // 30 chunks: the scrub goes on from where each stopped
	opts := memOptions()
	db := mustOpen(t, "node", opts)
	state := map[string]string{}
	for i := range 3000 {
		state[fmt.Sprintf("key-%05d", i)] = strings.Repeat("v", 100)
	}
	mustSetState(t, db, mustGroup(t, db, 7), state)
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Scrub(context.Background()); err != nil {
		t.Fatalf("Scrub of a sound store: %v", err)
	}
	mustClose(t, db)
	table := flipBitInTable(t, opts.FS, "node")

	db = mustOpen(t, "node", opts)
	err := db.Scrub(context.Background())
	if !errors.Is(err, ErrQuarantined) {
		t.Fatalf("Scrub after a bit flip in %s = %v, want ErrQuarantined", table, err)
	}
	select {
	case <-db.Quarantined():
	default:
		t.Fatal("Quarantined not closed after the scrub found corruption")
	}
	err = db.SaveNodeRecord([]byte("after"))
	if !errors.Is(err, ErrQuarantined) {
		t.Fatalf("a write to the quarantined store = %v, want ErrQuarantined", err)
	}
	mustClose(t, db)

	_, err = Open("node", opts)
	if !errors.Is(err, ErrQuarantined) || !strings.Contains(err.Error(), "earlier start") {
		t.Fatalf("Open of a quarantined directory = %v, want ErrQuarantined since an earlier start", err)
	}
}

package storage

import (
	"errors"
	"fmt"
	"testing"
)

func TestDB_StateSnapshot(t *testing.T) {
	db := mustOpen(t, "a", memOptions())
	g := mustGroup(t, db, 1)
	mustSetState(t, db, g, map[string]string{"a": "1", "b": "1"})
	mustWrite(t, db, func(b *Batch) error { return b.SetApplied(g, AppliedState{Index: 7, Term: 1}) })
	s, err := db.StateSnapshot(1)
	if err != nil {
		t.Fatal(err)
	}
	// A later round changes both keys and the applied index together.
	mustSetState(t, db, g, map[string]string{"a": "2", "b": "2", "c": "2"})
	mustWrite(t, db, func(b *Batch) error { return b.SetApplied(g, AppliedState{Index: 8, Term: 1}) })

	t.Run("get", func(t *testing.T) {
		for _, k := range []string{"a", "b"} {
			if v, ok, err := s.Get([]byte(k)); err != nil || !ok || string(v) != "1" {
				t.Errorf("Get(%s) = %q, %v, %v; want the snapshot's 1", k, v, ok, err)
			}
		}
		if _, ok, err := s.Get([]byte("c")); err != nil || ok {
			t.Errorf("Get(c) found a key written after the snapshot (%v)", err)
		}
	})
	t.Run("scan", func(t *testing.T) {
		var got []string
		if err := s.Scan(nil, nil, func(k, v []byte) bool {
			got = append(got, string(k)+"="+string(v))
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != "a=1" || got[1] != "b=1" {
			t.Errorf("Scan = %q, want [a=1 b=1]", got)
		}
	})
	t.Run("applied", func(t *testing.T) {
		if a, err := s.Applied(); err != nil || a != 7 {
			t.Errorf("Applied = %d, %v; want 7", a, err)
		}
		s2, err := db.StateSnapshot(99)
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if a, err := s2.Applied(); err != nil || a != 0 {
			t.Errorf("Applied of an unknown group = %d, %v", a, err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, _, err := s.Get([]byte("a")); !errors.Is(err, ErrClosed) {
			t.Errorf("Get after Close = %v, want ErrClosed", err)
		}
	})
}

// ScanSparse visits exactly what Scan visits, at the snapshot, over keys
// rewritten many times (versions in the memtable) and keys written once,
// also when it stops early.
func TestStateSnapshot_ScanSparseVisitsWhatScanVisits(t *testing.T) {
	db := mustOpen(t, "a", memOptions())
	g := mustGroup(t, db, 1)
	for i := range 300 { // a busy record: 300 versions of "q/!/hot"
		mustSetState(t, db, g, map[string]string{"q/!/hot": fmt.Sprint(i), "q/!/b" + fmt.Sprint(i%7): "x"})
	}
	mustSetState(t, db, g, map[string]string{"q/!/a": "1", "q/!/z": "1", "r/other": "1"})
	s, err := db.StateSnapshot(1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustSetState(t, db, g, map[string]string{"q/!/hot": "after", "q/!/c": "after"}) // not in the snapshot
	collect := func(scan func(lo, hi []byte, fn func(k, v []byte) bool) error, limit int) []string {
		var got []string
		if err := scan([]byte("q/!/"), []byte("q/!0"), func(k, v []byte) bool {
			got = append(got, string(k)+"="+string(v))
			return len(got) < limit
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, limit := range []int{100, 3} {
		want, got := collect(s.Scan, limit), collect(s.ScanSparse, limit)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("limit %d: ScanSparse = %q, Scan = %q", limit, got, want)
		}
	}
	if got := collect(s.ScanSparse, 100); len(got) != 10 || got[len(got)-2] != "q/!/hot=299" {
		t.Errorf("ScanSparse = %q, want a, b0..b6, hot=299, z", got)
	}
}

package storage

import (
	"fmt"
	"reflect"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// A seeded group opens as a replica that installed a snapshot of the
// seeded state: applied state, an empty log after the index, a hard state
// committing it; and its pairs survive a reopen.
func TestDB_SeedGroup(t *testing.T) {
	dir := t.TempDir()
	db := mustOpen(t, dir, Options{})
	s, err := db.SeedGroup(3)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range 3000 { // over one chunk: the seed commits on the way
		k, v := fmt.Sprintf("k%05d", i), fmt.Sprintf("%02000d", i)
		want[k] = v
		if err := s.Set([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	meta := raftpb.SnapshotMetadata{Index: 42, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{4}}}
	if err := s.Finish(meta); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SeedGroup(3); err == nil {
		t.Fatal("seeded a group twice")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = mustOpen(t, dir, Options{})
	defer db.Close()
	g, err := db.Group(3)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := g.FirstIndex()
	last, _ := g.LastIndex()
	term, _ := g.Term(42)
	hs, cs, _ := g.InitialState()
	if ap := g.Applied(); ap.Index != 42 || ap.Term != 1 || first != 43 || last != 42 || term != 1 ||
		hs.Commit != 42 || hs.Term != 1 || !reflect.DeepEqual(cs.Voters, []uint64{4}) {
		t.Fatalf("applied %+v, first %d, last %d, term(42) %d, hard state %+v, conf %+v", ap, first, last, term, hs, cs)
	}
	snap, err := db.StateSnapshot(3)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	got := map[string]string{}
	_ = snap.Scan(nil, nil, func(k, v []byte) bool { got[string(k)] = string(v); return true })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("seeded %d pairs, read back %d", len(want), len(got))
	}
	if _, err := db.SeedGroup(3); err == nil {
		t.Fatal("seeded an open group")
	}
}

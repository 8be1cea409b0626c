package storage

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// StateSnapshot reads one group's partition state at one moment: every Get
// and Scan sees the same committed batch — the state after one driver round,
// with the applied index stored with it — whatever the driver commits
// meanwhile. StateReader, by contrast, reads the newest state at each call.
// It pins a Pebble snapshot, which keeps the versions it sees from being
// compacted away: close it as soon as the reads are done. Reads may run
// concurrently (and may nest: a Get inside a Scan's fn), but not with Close.
type StateSnapshot struct {
	db     *DB
	group  uint64
	prefix []byte
	snap   *pebble.Snapshot // nil once closed
}

// StateSnapshot returns a snapshot of a group's committed partition state.
func (db *DB) StateSnapshot(group uint64) (*StateSnapshot, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return &StateSnapshot{db: db, group: group, prefix: groupPrefix(tagState, group), snap: db.pdb.NewSnapshot()}, nil
}

// reader returns the pinned snapshot, or ErrClosed when s or the database
// is closed.
func (s *StateSnapshot) reader() (*pebble.Snapshot, error) {
	if s.snap == nil || s.db.closed.Load() {
		return nil, ErrClosed
	}
	return s.snap, nil
}

// Get returns a copy of the value of key at the snapshot, and false if it
// was absent.
func (s *StateSnapshot) Get(key []byte) ([]byte, bool, error) {
	snap, err := s.reader()
	if err != nil {
		return nil, false, err
	}
	return getCopy(snap, append(append(make([]byte, 0, len(s.prefix)+len(key)), s.prefix...), key...))
}

// Scan has the semantics of StateWriter.Scan over the snapshot.
func (s *StateSnapshot) Scan(lo, hi []byte, fn func(k, v []byte) bool) error {
	return s.scan(lo, hi, false, fn)
}

// ScanSparse implements state.SparseScanner: Scan, stepping from each key
// to the next with a seek past the key's older versions.
func (s *StateSnapshot) ScanSparse(lo, hi []byte, fn func(k, v []byte) bool) error {
	return s.scan(lo, hi, true, fn)
}

func (s *StateSnapshot) scan(lo, hi []byte, sparse bool, fn func(k, v []byte) bool) error {
	snap, err := s.reader()
	if err != nil {
		return err
	}
	return scanState(snap, s.prefix, lo, hi, sparse, fn)
}

// Applied returns the group's applied index at the snapshot: the index of
// the last entry whose effects it holds (0 for a group without state). Two
// snapshots of one group with the same applied index hold the same state,
// on any replica.
func (s *StateSnapshot) Applied() (uint64, error) {
	snap, err := s.reader()
	if err != nil {
		return 0, err
	}
	v, ok, err := getCopy(snap, raftKey(s.group, subApplied))
	if err != nil || !ok {
		return 0, err
	}
	st, err := decodeApplied(v)
	if err != nil {
		return 0, fmt.Errorf("storage: applied state of group %d: %w", s.group, err)
	}
	return st.Index, nil
}

// Close releases the snapshot; later reads fail with ErrClosed. Closing
// twice does nothing.
func (s *StateSnapshot) Close() error {
	if s.snap == nil {
		return nil
	}
	snap := s.snap
	s.snap = nil
	if err := snap.Close(); err != nil {
		return fmt.Errorf("storage: close state snapshot: %w", err)
	}
	return nil
}

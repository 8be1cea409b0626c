package storage

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3/raftpb"
)

// seedChunk is how many bytes of state a GroupSeed gathers before it
// commits them, so a large group is never held in memory whole.
const seedChunk = 4 << 20

// GroupSeed writes a group that starts from a state made elsewhere (a
// backup restored into a new data directory) instead of an empty log: the
// partition state first, in chunks, then, by Finish, the applied state,
// truncation point and hard state that make the group start as if it had
// installed a Raft snapshot of that state. Until Finish commits, the group
// has partition state but no applied state; a restore that fails before
// Finish leaves a data directory to discard.
type GroupSeed struct {
	db     *DB
	group  uint64
	prefix []byte
	pb     *pebble.Batch
	pairs  uint64
}

// SeedGroup starts seeding group. The group must have nothing stored and
// must not have been opened (Group) in this DB: seeding is for a data
// directory no node has run on yet.
func (db *DB) SeedGroup(group uint64) (*GroupSeed, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	db.mu.Lock()
	_, open := db.groups[group]
	db.mu.Unlock()
	if open {
		return nil, fmt.Errorf("storage: seed group %d: the group is open", group)
	}
	ids, err := db.Groups()
	if err != nil {
		return nil, err
	}
	if slices.Contains(ids, group) {
		return nil, fmt.Errorf("storage: seed group %d: the group already holds data", group)
	}
	return &GroupSeed{db: db, group: group, prefix: groupPrefix(tagState, group), pb: db.pdb.NewBatch()}, nil
}

// Set adds one pair of partition state (key relative to the group).
func (s *GroupSeed) Set(k, v []byte) error {
	if s.pb == nil {
		return errors.New("storage: seed already finished or closed")
	}
	op := s.pb.SetDeferred(len(s.prefix)+len(k), len(v))
	copy(op.Key[copy(op.Key, s.prefix):], k)
	copy(op.Value, v)
	if err := op.Finish(); err != nil {
		return fmt.Errorf("storage: seed group %d: %w", s.group, err)
	}
	s.pairs++
	if s.pb.Len() < seedChunk {
		return nil
	}
	if err := s.db.commit(s.pb, false); err != nil {
		return fmt.Errorf("storage: seed group %d: %w", s.group, err)
	}
	_ = s.pb.Close() // closing a committed batch only returns it to the pool
	s.pb = s.db.pdb.NewBatch()
	return nil
}

// Finish writes what makes the seeded state the group's applied state at
// meta.Index (term meta.Term, configuration meta.ConfState): the applied
// state, a truncation point at meta.Index (the log starts after it, empty)
// and a hard state committing meta.Index in meta.Term, then commits it all
// with an fsync. The group then opens as a replica that installed a
// snapshot of the seeded state.
func (s *GroupSeed) Finish(meta raftpb.SnapshotMetadata) error {
	if s.pb == nil {
		return errors.New("storage: seed already finished or closed")
	}
	if meta.Index == 0 || meta.Term == 0 {
		return fmt.Errorf("storage: seed group %d: index and term must be positive", s.group)
	}
	st := AppliedState{Index: meta.Index, Term: meta.Term, ConfState: meta.ConfState}
	val := make([]byte, appliedSize(&st))
	if err := encodeApplied(val, &st); err != nil {
		return err
	}
	var trunc [16]byte
	encodeTrunc(trunc[:], meta.Index, meta.Term)
	hs := raftpb.HardState{Term: meta.Term, Commit: meta.Index}
	hsb, err := hs.Marshal()
	if err != nil {
		return err
	}
	err = errors.Join(
		s.pb.Set(raftKey(s.group, subApplied), val, nil),
		s.pb.Set(raftKey(s.group, subTrunc), trunc[:], nil),
		s.pb.Set(raftKey(s.group, subHardState), hsb, nil),
	)
	if err == nil {
		err = s.db.commit(s.pb, true)
	}
	s.Close()
	if err != nil {
		return fmt.Errorf("storage: seed group %d: %w", s.group, err)
	}
	return nil
}

// Pairs returns how many pairs were set.
func (s *GroupSeed) Pairs() uint64 { return s.pairs }

// Close discards what was set and not yet committed. Closing twice, or
// after Finish, does nothing.
func (s *GroupSeed) Close() {
	if s.pb != nil {
		_ = s.pb.Close()
		s.pb = nil
	}
}

package storage

import (
	"encoding/binary"
	"fmt"
	"slices"

	"go.etcd.io/raft/v3/raftpb"
)

// AppliedState is what a group has applied to its partition state: the index and term of the
// last applied entry and the configuration in force at that index. It is written in the same
// batch as the state changes it describes, so after a crash state and AppliedState agree.
type AppliedState struct {
	// Index is the index of the last applied log entry (0 if nothing was applied).
	Index uint64
	// Term is the term of the entry at Index.
	Term uint64
	// ConfState is the membership configuration after applying Index.
	ConfState raftpb.ConfState
}

// encodeTrunc encodes a truncation point (index and term of the last discarded entry).
func encodeTrunc(dst []byte, index, term uint64) {
	binary.BigEndian.PutUint64(dst[0:], index)
	binary.BigEndian.PutUint64(dst[8:], term)
}

// decodeTrunc decodes a truncation point written by encodeTrunc.
func decodeTrunc(b []byte) (index, term uint64, err error) {
	if len(b) != 16 {
		return 0, 0, fmt.Errorf("truncation point of %d bytes: %w", len(b), ErrCorrupt)
	}
	return binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:]), nil
}

// appliedSize returns the encoded size of st.
func appliedSize(st *AppliedState) int {
	return 16 + st.ConfState.Size()
}

// encodeApplied encodes st into dst, which must be appliedSize(st) long.
func encodeApplied(dst []byte, st *AppliedState) error {
	binary.BigEndian.PutUint64(dst[0:], st.Index)
	binary.BigEndian.PutUint64(dst[8:], st.Term)
	if _, err := st.ConfState.MarshalToSizedBuffer(dst[16:]); err != nil {
		return fmt.Errorf("encode conf state: %w", err)
	}
	return nil
}

// decodeApplied decodes an applied state written by encodeApplied. The result does not alias b.
func decodeApplied(b []byte) (AppliedState, error) {
	var st AppliedState
	if len(b) < 16 {
		return st, fmt.Errorf("applied state of %d bytes: %w", len(b), ErrCorrupt)
	}
	st.Index = binary.BigEndian.Uint64(b)
	st.Term = binary.BigEndian.Uint64(b[8:])
	if err := st.ConfState.Unmarshal(b[16:]); err != nil {
		return AppliedState{}, fmt.Errorf("decode conf state: %v: %w", err, ErrCorrupt)
	}
	return st, nil
}

// cloneConfState returns a deep copy of cs so that later changes by the caller cannot reach
// the copy kept in memory.
func cloneConfState(cs raftpb.ConfState) raftpb.ConfState {
	return raftpb.ConfState{
		Voters:         slices.Clone(cs.Voters),
		Learners:       slices.Clone(cs.Learners),
		VotersOutgoing: slices.Clone(cs.VotersOutgoing),
		LearnersNext:   slices.Clone(cs.LearnersNext),
		AutoLeave:      cs.AutoLeave,
	}
}

// confStateEqual reports whether a and b are identical field by field (order matters).
func confStateEqual(a, b *raftpb.ConfState) bool {
	return a.AutoLeave == b.AutoLeave &&
		slices.Equal(a.Voters, b.Voters) &&
		slices.Equal(a.Learners, b.Learners) &&
		slices.Equal(a.VotersOutgoing, b.VotersOutgoing) &&
		slices.Equal(a.LearnersNext, b.LearnersNext)
}

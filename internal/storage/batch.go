package storage

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// maxPointDeletes is the longest conflicting log suffix removed with point deletions; longer
// ones get a range deletion.
const maxPointDeletes = 64

// cacheOpKind says how a committed batch changes a group's entry cache.
type cacheOpKind uint8

const (
	cacheAppend cacheOpKind = iota + 1
	cacheCompact
	cacheReset
)

// cacheOp is one change to a group's entry cache, replayed in order after commit.
type cacheOp struct {
	kind  cacheOpKind
	ents  []raftpb.Entry
	index uint64
}

// groupDelta is a batch's pending view of one group.
type groupDelta struct {
	g     *GroupStorage
	st    groupState
	ops   []cacheOp
	state *StateWriter // allocated per batch so a stale writer can never reach a reused delta
}

// Batch collects one driver round's writes for any number of groups and commits them
// atomically with at most one fsync. It wraps an indexed Pebble batch, so reads through
// State see the batch's own earlier writes. A Batch is used by one goroutine and must be
// closed; after Close it must not be touched again.
//
// Operations on one group are checked against the group's state as left by the batch's
// earlier operations, and the in-memory state of every touched group changes only when
// Commit succeeds.
type Batch struct {
	db        *DB
	pb        *pebble.Batch
	deltas    []*groupDelta // deltas[:n] are in use; the rest are kept for reuse
	n         int
	byGroup   map[*GroupStorage]*groupDelta
	committed bool
	gen       uint64 // bumped on every reuse; StateWriters of earlier uses are refused
}

// NewBatch starts an empty batch.
func (db *DB) NewBatch() *Batch {
	b, _ := db.batchPool.Get().(*Batch)
	if b == nil {
		b = &Batch{db: db, byGroup: make(map[*GroupStorage]*groupDelta)}
	}
	b.pb = db.pdb.NewIndexedBatch()
	b.gen++
	return b
}

// Close releases the batch, discarding its writes if it was not committed.
func (b *Batch) Close() {
	if b.pb == nil {
		return
	}
	_ = b.pb.Close() // Closing a batch only returns it to Pebble's pool.
	b.pb = nil
	for _, d := range b.deltas[:b.n] {
		clear(d.ops) // drop references to entries
		*d = groupDelta{ops: d.ops[:0]}
	}
	b.n = 0
	clear(b.byGroup)
	b.committed = false
	b.db.batchPool.Put(b)
}

// Empty reports whether the batch holds no writes.
func (b *Batch) Empty() bool {
	for _, d := range b.deltas[:b.n] {
		if d.state != nil && len(d.state.latest) > 0 {
			return false
		}
	}
	return b.pb.Empty()
}

// writeLatest writes every group's lazily stored state values
// (StateWriter.SetLatest) to the Pebble batch.
func (b *Batch) writeLatest() error {
	for _, d := range b.deltas[:b.n] {
		if d.state != nil && len(d.state.latest) > 0 {
			if err := d.state.writeLatest(nil, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// delta returns the batch's pending view of g, starting from g's committed state.
func (b *Batch) delta(g *GroupStorage) (*groupDelta, error) {
	if g.db != b.db {
		return nil, fmt.Errorf("storage: group %d belongs to another database", g.id)
	}
	if b.committed {
		return nil, errors.New("storage: batch already committed")
	}
	if d, ok := b.byGroup[g]; ok {
		return d, nil
	}
	if b.n == len(b.deltas) {
		b.deltas = append(b.deltas, &groupDelta{})
	}
	d := b.deltas[b.n]
	b.n++
	d.g = g
	d.st = g.state()
	b.byGroup[g] = d
	return d, nil
}

// Append writes contiguous log entries. Entries already compacted are skipped; stored entries
// at or after ents[0].Index are replaced, and any beyond the new last index are deleted (raft
// truncating a conflicting suffix). ents must not be modified afterwards: after commit they
// may be served from the entry cache.
func (b *Batch) Append(g *GroupStorage, ents []raftpb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	d, err := b.delta(g)
	if err != nil {
		return err
	}
	for i := range ents {
		if ents[i].Index != ents[0].Index+uint64(i) {
			return fmt.Errorf("storage: group %d: append of non-contiguous entries (%d after %d)", g.id, ents[i].Index, ents[i-1].Index)
		}
	}
	st := &d.st
	first, newLast := st.truncIndex+1, ents[len(ents)-1].Index
	if newLast < first {
		return nil
	}
	if ents[0].Index < first {
		ents = ents[first-ents[0].Index:]
	}
	if ents[0].Index > st.last+1 {
		return fmt.Errorf("storage: group %d: append at %d leaves a gap after last index %d", g.id, ents[0].Index, st.last)
	}
	for i := range ents {
		e := &ents[i]
		op := b.pb.SetDeferred(logKeyLen, e.Size())
		putLogKey(op.Key, g.id, e.Index)
		if _, err := e.MarshalToSizedBuffer(op.Value); err != nil {
			return fmt.Errorf("storage: group %d: encode entry %d: %w", g.id, e.Index, err)
		}
		if err := op.Finish(); err != nil {
			return fmt.Errorf("storage: group %d: append: %w", g.id, err)
		}
	}
	if newLast < st.last {
		if err := b.deleteLog(g.id, newLast+1, st.last+1); err != nil {
			return err
		}
	}
	st.last = newLast
	d.ops = append(d.ops, cacheOp{kind: cacheAppend, ents: ents})
	return nil
}

// deleteLog deletes the log entries [lo, hi) of a group.
func (b *Batch) deleteLog(group, lo, hi uint64) error {
	if hi-lo > maxPointDeletes {
		if err := b.pb.DeleteRange(logKey(group, lo), logKey(group, hi), nil); err != nil {
			return fmt.Errorf("storage: group %d: delete log [%d, %d): %w", group, lo, hi, err)
		}
		return nil
	}
	for i := lo; i < hi; i++ {
		op := b.pb.DeleteDeferred(logKeyLen)
		putLogKey(op.Key, group, i)
		if err := op.Finish(); err != nil {
			return fmt.Errorf("storage: group %d: delete entry %d: %w", group, i, err)
		}
	}
	return nil
}

// SetHardState writes the group's hard state.
func (b *Batch) SetHardState(g *GroupStorage, hs raftpb.HardState) error {
	d, err := b.delta(g)
	if err != nil {
		return err
	}
	op := b.pb.SetDeferred(raftKeyLen, hs.Size())
	putRaftKey(op.Key, g.id, subHardState)
	if _, err := hs.MarshalToSizedBuffer(op.Value); err != nil {
		return fmt.Errorf("storage: group %d: encode hard state: %w", g.id, err)
	}
	if err := op.Finish(); err != nil {
		return fmt.Errorf("storage: group %d: set hard state: %w", g.id, err)
	}
	d.st.hs = hs
	return nil
}

// SetApplied writes the group's applied state. Put it in the same batch as the partition
// state changes it describes. The ConfState is copied when it differs from the current one.
func (b *Batch) SetApplied(g *GroupStorage, st AppliedState) error {
	d, err := b.delta(g)
	if err != nil {
		return err
	}
	op := b.pb.SetDeferred(raftKeyLen, appliedSize(&st))
	putRaftKey(op.Key, g.id, subApplied)
	if err := encodeApplied(op.Value, &st); err != nil {
		return fmt.Errorf("storage: group %d: %w", g.id, err)
	}
	if err := op.Finish(); err != nil {
		return fmt.Errorf("storage: group %d: set applied state: %w", g.id, err)
	}
	if !confStateEqual(&st.ConfState, &d.st.applied.ConfState) {
		st.ConfState = cloneConfState(st.ConfState)
	} else {
		st.ConfState = d.st.applied.ConfState
	}
	d.st.applied = st
	return nil
}

// Compact discards the log entries up to and including index, which must be applied and
// stored, and keeps the term of index as the truncation point. It returns raft.ErrCompacted
// if index was already discarded.
func (b *Batch) Compact(g *GroupStorage, index uint64) error {
	d, err := b.delta(g)
	if err != nil {
		return err
	}
	st := &d.st
	switch {
	case index <= st.truncIndex:
		return fmt.Errorf("storage: group %d: compact to %d: %w", g.id, index, raft.ErrCompacted)
	case index > st.last:
		return fmt.Errorf("storage: group %d: compact to %d beyond last index %d", g.id, index, st.last)
	case index > st.applied.Index:
		return fmt.Errorf("storage: group %d: compact to %d beyond applied index %d", g.id, index, st.applied.Index)
	}
	v, ok, err := getCopy(b.pb, logKey(g.id, index))
	if err != nil {
		return fmt.Errorf("storage: group %d: compact: %w", g.id, err)
	}
	var e raftpb.Entry
	if !ok {
		return fmt.Errorf("storage: group %d: compact: entry %d missing: %w", g.id, index, ErrCorrupt)
	}
	if err := e.Unmarshal(v); err != nil || e.Index != index {
		return fmt.Errorf("storage: group %d: compact: entry %d: %w", g.id, index, ErrCorrupt)
	}
	if err := b.deleteLog(g.id, st.truncIndex+1, index+1); err != nil {
		return err
	}
	if err := b.setTrunc(g.id, index, e.Term); err != nil {
		return err
	}
	st.truncIndex, st.truncTerm = index, e.Term
	d.ops = append(d.ops, cacheOp{kind: cacheCompact, index: index})
	return nil
}

// setTrunc writes a group's truncation point.
func (b *Batch) setTrunc(group, index, term uint64) error {
	op := b.pb.SetDeferred(raftKeyLen, 16)
	putRaftKey(op.Key, group, subTrunc)
	encodeTrunc(op.Value, index, term)
	if err := op.Finish(); err != nil {
		return fmt.Errorf("storage: group %d: set truncation point: %w", group, err)
	}
	return nil
}

// State returns read/write access to the group's partition state within this batch.
func (b *Batch) State(g *GroupStorage) *StateWriter {
	d, err := b.delta(g)
	if err != nil {
		return &StateWriter{err: err}
	}
	if d.state == nil {
		d.state = &StateWriter{b: b, gen: b.gen, prefix: groupPrefix(tagState, g.id)}
	}
	return d.state
}

// Commit writes the batch atomically, fsyncing it if sync is set, and then updates the
// in-memory state of every group it touched. On error nothing in memory changes and the
// batch must be closed.
func (b *Batch) Commit(sync bool) error {
	if b.committed {
		return errors.New("storage: batch already committed")
	}
	if b.db.closed.Load() {
		return ErrClosed
	}
	if err := b.writeLatest(); err != nil {
		return err
	}
	if !b.pb.Empty() {
		if err := b.db.commit(b.pb, sync); err != nil {
			return fmt.Errorf("storage: commit: %w", err)
		}
	}
	b.committed = true
	for _, d := range b.deltas[:b.n] {
		d.g.install(&d.st, d.ops)
	}
	return nil
}

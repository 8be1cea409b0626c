package storage

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

var _ raft.Storage = (*GroupStorage)(nil)

// groupState is the in-memory image of a group's durable raft metadata. A Batch works on a
// copy and installs it after a successful commit.
type groupState struct {
	truncIndex uint64 // index of the last discarded entry; FirstIndex is truncIndex+1
	truncTerm  uint64 // term of the entry at truncIndex
	last       uint64 // LastIndex; equals truncIndex when the log is empty
	hs         raftpb.HardState
	applied    AppliedState
}

// GroupStorage is the raft.Storage of one Raft group. It keeps the log bounds, hard state and
// applied state in memory (loaded when the group is opened) and a bounded cache of the newest
// entries; older entries are read from Pebble.
//
// The raft.Storage methods are meant for the driver goroutine, which is also the only writer
// (through Batch); Applied and ID may be called from any goroutine.
type GroupStorage struct {
	db *DB
	id uint64

	mu    sync.RWMutex // guards st and cache
	st    groupState
	cache entryCache
}

// loadGroup reads a group's metadata from Pebble. Nothing is written.
func (db *DB) loadGroup(id uint64) (*GroupStorage, error) {
	g := &GroupStorage{db: db, id: id}
	g.cache.maxEntries, g.cache.maxBytes = db.cacheEntries, db.cacheBytes
	st := &g.st

	if v, ok, err := db.getCopy(raftKey(id, subHardState)); err != nil {
		return nil, err
	} else if ok {
		if err := st.hs.Unmarshal(v); err != nil {
			return nil, fmt.Errorf("group %d: decode hard state: %v: %w", id, err, ErrCorrupt)
		}
	}
	if v, ok, err := db.getCopy(raftKey(id, subTrunc)); err != nil {
		return nil, err
	} else if ok {
		if st.truncIndex, st.truncTerm, err = decodeTrunc(v); err != nil {
			return nil, fmt.Errorf("group %d: %w", id, err)
		}
	}
	if v, ok, err := db.getCopy(raftKey(id, subApplied)); err != nil {
		return nil, err
	} else if ok {
		if st.applied, err = decodeApplied(v); err != nil {
			return nil, fmt.Errorf("group %d: %w", id, err)
		}
	}

	lo, hi := logSpan(id)
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("group %d: open log iterator: %w", id, err)
	}
	st.last = st.truncIndex
	if it.Last() {
		st.last = max(st.last, logIndex(it.Key()))
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("group %d: find last index: %w", id, err)
	}
	st.hs.Commit = committedAtLeastApplied(st.hs.Commit, st.applied.Index, st.last)
	return g, nil
}

// committedAtLeastApplied returns the commit index to start Raft from: the
// saved one, or the applied index when that is ahead and the log holds it.
// The engine applies entries already durable in the log in an unsynced batch
// committed before the round's batch, which carries the hard state with the
// commit index that made them committed (multiraft's applyDurable). When the
// node stops between the two (the round's commit failed, the process died),
// the applied index is ahead of the saved commit index, and Raft refuses to
// start ("applied is out of range"). Those entries were handed out by Raft as
// committed, and they are in this node's log, so the commit index may be
// raised to them.
func committedAtLeastApplied(commit, applied, last uint64) uint64 {
	if applied > commit && applied <= last {
		return applied
	}
	return commit
}

// ID returns the group id.
func (g *GroupStorage) ID() uint64 { return g.id }

// HardState returns the hard state last committed by SetHardState. Its
// commit index may trail Raft's: a change of the commit index alone need not
// be saved (Raft learns it again from the leader, and the store raises it
// to the applied index when the group opens: committedAtLeastApplied).
func (g *GroupStorage) HardState() raftpb.HardState {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.st.hs
}

// Applied returns the applied state last committed by SetApplied or by a snapshot. The
// ConfState slices are shared and must not be modified.
func (g *GroupStorage) Applied() AppliedState {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.st.applied
}

// state returns a copy of the committed in-memory state.
func (g *GroupStorage) state() groupState {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.st
}

// InitialState implements raft.Storage: the saved hard state and the ConfState of the applied
// state, which is what raft must start from when Config.Applied is Applied().Index.
func (g *GroupStorage) InitialState() (raftpb.HardState, raftpb.ConfState, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.st.hs, g.st.applied.ConfState, nil
}

// FirstIndex implements raft.Storage.
func (g *GroupStorage) FirstIndex() (uint64, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.st.truncIndex + 1, nil
}

// LastIndex implements raft.Storage.
func (g *GroupStorage) LastIndex() (uint64, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.st.last, nil
}

// Term implements raft.Storage. The term of FirstIndex()-1 is the truncation point's.
func (g *GroupStorage) Term(i uint64) (uint64, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	switch {
	case i < g.st.truncIndex:
		return 0, raft.ErrCompacted
	case i == g.st.truncIndex:
		return g.st.truncTerm, nil
	case i > g.st.last:
		return 0, raft.ErrUnavailable
	}
	if e, ok := g.cache.lookup(i); ok {
		return e.Term, nil
	}
	v, ok, err := g.db.getCopy(logKey(g.id, i))
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, raft.ErrUnavailable
	}
	var e raftpb.Entry
	if err := e.Unmarshal(v); err != nil || e.Index != i {
		return 0, fmt.Errorf("storage: group %d: entry %d: %w", g.id, i, ErrCorrupt)
	}
	return e.Term, nil
}

// Entries implements raft.Storage: entries [lo, hi) limited to maxSize bytes of encoded
// entries, but at least one. The newest entries come from the cache without copying; the
// returned slice has its capacity clipped so that appending to it reallocates.
func (g *GroupStorage) Entries(lo, hi, maxSize uint64) ([]raftpb.Entry, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	st := &g.st
	switch {
	case lo <= st.truncIndex:
		return nil, raft.ErrCompacted
	case hi > st.last+1 || lo > hi:
		return nil, fmt.Errorf("storage: group %d: entries [%d, %d) out of bounds (last index %d)", g.id, lo, hi, st.last)
	case st.last == st.truncIndex:
		return nil, raft.ErrUnavailable
	case lo == hi:
		return nil, nil
	}
	cacheFirst := g.cache.first()
	if cacheFirst != 0 && lo >= cacheFirst {
		ents, _ := g.cache.slice(lo, hi, maxSize, 0, 0)
		return ents, nil
	}
	upto := hi
	if cacheFirst != 0 && cacheFirst < hi {
		upto = cacheFirst
	}
	ents, size, full, err := g.db.readEntries(g.id, lo, upto, maxSize)
	if err != nil || full || upto == hi {
		return ents, err
	}
	more, _ := g.cache.slice(upto, hi, maxSize, size, len(ents))
	return append(ents, more...), nil
}

// readEntries reads entries [lo, hi) of a group from Pebble, stopping before maxSize would be
// exceeded (but returning at least one entry). full reports that the size limit stopped it.
func (db *DB) readEntries(group, lo, hi, maxSize uint64) (ents []raftpb.Entry, size uint64, full bool, err error) {
	lower, upper := logKey(group, lo), logKey(group, hi)
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, 0, false, fmt.Errorf("storage: group %d: open log iterator: %w", group, err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("storage: group %d: close log iterator: %w", group, cerr)
		}
	}()
	ents = make([]raftpb.Entry, 0, min(hi-lo, 64))
	next := lo
	for valid := it.First(); valid; valid = it.Next() {
		v, verr := it.ValueAndErr()
		if verr != nil {
			return nil, 0, false, fmt.Errorf("storage: group %d: read entry: %w", group, verr)
		}
		if logIndex(it.Key()) != next {
			// A hole in the log: the requested range is not available.
			return nil, 0, false, raft.ErrUnavailable
		}
		var e raftpb.Entry
		if uerr := e.Unmarshal(v); uerr != nil || e.Index != next {
			return nil, 0, false, fmt.Errorf("storage: group %d: entry %d: %w", group, next, ErrCorrupt)
		}
		s := uint64(e.Size())
		if len(ents) > 0 && size+s > maxSize {
			return ents, size, true, nil
		}
		size += s
		ents = append(ents, e)
		next++
	}
	if err := it.Error(); err != nil {
		return nil, 0, false, fmt.Errorf("storage: group %d: iterate log: %w", group, err)
	}
	if next != hi {
		return nil, 0, false, raft.ErrUnavailable
	}
	return ents, size, false, nil
}

// Snapshot implements raft.Storage. It returns metadata only (Data is nil): the group's
// current applied state, whose partition state is pinned so that DB.SnapshotData can stream
// it. It returns raft.ErrSnapshotTemporarilyUnavailable while nothing has been applied.
func (g *GroupStorage) Snapshot() (raftpb.Snapshot, error) {
	g.mu.RLock()
	applied := g.st.applied
	g.mu.RUnlock()
	if applied.Index == 0 {
		return raftpb.Snapshot{}, raft.ErrSnapshotTemporarilyUnavailable
	}
	meta := raftpb.SnapshotMetadata{
		ConfState: cloneConfState(applied.ConfState),
		Index:     applied.Index,
		Term:      applied.Term,
	}
	if err := g.db.pins.pin(g.db, g.id, meta); err != nil {
		return raftpb.Snapshot{}, err
	}
	return raftpb.Snapshot{Metadata: meta}, nil
}

// install replaces the committed in-memory state after a batch committed.
func (g *GroupStorage) install(st *groupState, ops []cacheOp) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.st = *st
	for i := range ops {
		op := &ops[i]
		switch op.kind {
		case cacheAppend:
			g.cache.append(op.ents)
		case cacheCompact:
			g.cache.dropThrough(op.index)
		case cacheReset:
			g.cache.reset()
		}
	}
}

// clear forgets everything in memory, after the group was destroyed.
func (g *GroupStorage) clear() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.st = groupState{}
	g.cache.reset()
}

package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/parley-chat/parley/internal/state"
)

// Node logs: the ids of the lists a node keeps under tagNodeLog.
const (
	// NodeLogAudit holds the node's audit events (internal/audit), one
	// encoded event per record.
	NodeLogAudit byte = 0x01
)

// NodeLog is an append-only list of opaque records a node keeps about
// itself under 0x04 <id> <seq u64>: never replicated, never part of a
// snapshot, untouched by DestroyGroup. It keeps the newest records only, at
// most its bound; older ones are deleted as new ones arrive. A NodeLog is
// safe for concurrent use; appends are serialised.
type NodeLog struct {
	db   *DB
	id   byte
	keep uint64

	mu    sync.Mutex // guards first and next, serialises Append
	first uint64     // seq of the oldest record kept
	next  uint64     // seq the next record gets
}

// OpenNodeLog returns the node log id, keeping at most keep (> 0) records.
// Open it once per id: two NodeLogs of one id would hand out the same
// sequence numbers.
func (db *DB) OpenNodeLog(id byte, keep int) (*NodeLog, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	if keep <= 0 {
		return nil, fmt.Errorf("storage: node log %d: bound %d must be positive", id, keep)
	}
	l := &NodeLog{db: db, id: id, keep: uint64(keep)}
	lo, hi := l.span()
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("storage: open node log %d: %w", id, err)
	}
	var bad []byte
	seq := func() uint64 {
		k := it.Key()
		if len(k) != nodeLogKeyLen {
			bad = slices.Clone(k)
			return 0
		}
		return binary.BigEndian.Uint64(k[2:])
	}
	if it.First() {
		l.first = seq()
	}
	if it.Last() {
		l.next = seq() + 1
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("storage: open node log %d: %w", id, err)
	}
	if bad != nil {
		return nil, fmt.Errorf("storage: open node log %d: key %x: %w", id, bad, ErrCorrupt)
	}
	return l, nil
}

// Append durably adds recs after the existing records (one synced commit),
// then deletes the oldest past the bound in the same commit. It refuses
// with ErrDiskFull (wrapped) while the disk is nearly full, writing
// nothing.
func (l *NodeLog) Append(recs [][]byte) error {
	if len(recs) == 0 {
		return nil
	}
	if l.db.closed.Load() {
		return ErrClosed
	}
	if err := l.db.CheckSpace(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	pb := l.db.pdb.NewBatch()
	defer pb.Close()
	next := l.next
	for _, r := range recs {
		if err := pb.Set(l.key(next), r, nil); err != nil {
			return fmt.Errorf("storage: append to node log %d: %w", l.id, err)
		}
		next++
	}
	first := l.first
	if next-first > l.keep {
		first = next - l.keep
		if err := pb.DeleteRange(l.key(l.first), l.key(first), nil); err != nil {
			return fmt.Errorf("storage: trim node log %d: %w", l.id, err)
		}
	}
	if err := l.db.commit(pb, true); err != nil {
		return fmt.Errorf("storage: append to node log %d: %w", l.id, err)
	}
	l.first, l.next = first, next
	return nil
}

// Newest calls fn with each record, newest first, until fn returns false
// or none is left. fn must not keep the slice it is given.
func (l *NodeLog) Newest(fn func(rec []byte) bool) error {
	if l.db.closed.Load() {
		return ErrClosed
	}
	lo, hi := l.span()
	it, err := l.db.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("storage: read node log %d: %w", l.id, err)
	}
	for valid := it.Last(); valid && fn(it.Value()); valid = it.Prev() {
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("storage: read node log %d: %w", l.id, err)
	}
	return nil
}

// Len returns how many records the log keeps.
func (l *NodeLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.next - l.first)
}

// span returns the bounds [lo, hi) of the log's keys.
func (l *NodeLog) span() (lo, hi []byte) {
	p := []byte{tagNodeLog, l.id}
	return p, state.PrefixEnd(p)
}

// key returns the key of record seq.
func (l *NodeLog) key(seq uint64) []byte {
	k := make([]byte, nodeLogKeyLen)
	k[0], k[1] = tagNodeLog, l.id
	binary.BigEndian.PutUint64(k[2:], seq)
	return k
}

package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/parley-chat/parley/internal/state"
)

// StateWriter reads and writes one group's partition state inside a Batch. Keys are relative
// to the group (any bytes, including empty); reads see the batch's earlier writes on top of
// the committed state.
type StateWriter struct {
	b      *Batch
	gen    uint64 // the batch use this writer belongs to
	prefix []byte // tagState <group>
	key    []byte // scratch for absolute keys
	err    error  // set when the batch refused the group
	// latest holds the values SetLatest stored that are not yet in the
	// Pebble batch: one per key, few keys. Gets answer from it; Set and
	// Delete of such a key drop it; a Scan covering it, Batch.Empty and
	// Batch.Commit write it first.
	latest []latestValue
}

// latestValue is a value stored by SetLatest, not yet in the Pebble batch.
type latestValue struct {
	key, value []byte
}

// SetLatest implements state.LatestSetter: key's value is kept here and
// written to the batch only when a scan covers it or the batch is
// committed, so a key the batch sets again and again is inserted into the
// memtable once.
func (w *StateWriter) SetLatest(key, value []byte) error {
	if err := w.check(); err != nil {
		return err
	}
	for i := range w.latest {
		if l := &w.latest[i]; string(l.key) == string(key) {
			l.value = append(l.value[:0], value...)
			return nil
		}
	}
	w.latest = append(w.latest, latestValue{key: bytes.Clone(key), value: append([]byte{}, value...)})
	return nil
}

// latestIndex returns the index of key's lazily stored value, -1 if none.
func (w *StateWriter) latestIndex(key []byte) int {
	for i := range w.latest {
		if string(w.latest[i].key) == string(key) {
			return i
		}
	}
	return -1
}

// dropLatest forgets key's lazily stored value: a Set or Delete replaces it.
func (w *StateWriter) dropLatest(key []byte) {
	if i := w.latestIndex(key); i >= 0 {
		w.latest = slices.Delete(w.latest, i, i+1)
	}
}

// writeLatest writes to the batch the lazily stored values whose keys are
// in [lo, hi) (hi nil: to the end), and forgets them here.
func (w *StateWriter) writeLatest(lo, hi []byte) error {
	kept := w.latest[:0]
	for _, l := range w.latest {
		if bytes.Compare(l.key, lo) < 0 || (hi != nil && bytes.Compare(l.key, hi) >= 0) {
			kept = append(kept, l)
			continue
		}
		if err := w.set(l.key, l.value); err != nil {
			return err
		}
	}
	clear(w.latest[len(kept):])
	w.latest = kept
	return nil
}

// check returns why the writer cannot be used, if it cannot.
func (w *StateWriter) check() error {
	switch {
	case w.err != nil:
		return w.err
	case w.b.pb == nil || w.b.gen != w.gen:
		return errors.New("storage: state access through a closed batch")
	case w.b.committed:
		return errors.New("storage: state access through a committed batch")
	}
	return nil
}

// Get returns a copy of the value of key, and false if it is absent.
func (w *StateWriter) Get(key []byte) ([]byte, bool, error) {
	if err := w.check(); err != nil {
		return nil, false, err
	}
	if len(w.latest) > 0 {
		if i := w.latestIndex(key); i >= 0 {
			return bytes.Clone(w.latest[i].value), true, nil
		}
	}
	w.key = append(append(w.key[:0], w.prefix...), key...)
	return getCopy(w.b.pb, w.key)
}

// Scan calls fn for every pair with lo <= key < hi in key order (hi nil means to the end of
// the group) until fn returns false. k and v are valid only during the call. Writes made by
// fn are not seen by the running scan.
func (w *StateWriter) Scan(lo, hi []byte, fn func(k, v []byte) bool) error {
	if err := w.check(); err != nil {
		return err
	}
	if len(w.latest) > 0 {
		if err := w.writeLatest(lo, hi); err != nil {
			return err
		}
	}
	return scanState(w.b.pb, w.prefix, lo, hi, false, fn)
}

// Set writes key = value.
func (w *StateWriter) Set(key, value []byte) error {
	if err := w.check(); err != nil {
		return err
	}
	if len(w.latest) > 0 {
		w.dropLatest(key)
	}
	return w.set(key, value)
}

// set writes key = value to the Pebble batch.
func (w *StateWriter) set(key, value []byte) error {
	op := w.b.pb.SetDeferred(len(w.prefix)+len(key), len(value))
	copy(op.Key[copy(op.Key, w.prefix):], key)
	copy(op.Value, value)
	if err := op.Finish(); err != nil {
		return fmt.Errorf("storage: set state: %w", err)
	}
	return nil
}

// Delete removes key (a no-op if it is absent).
func (w *StateWriter) Delete(key []byte) error {
	if err := w.check(); err != nil {
		return err
	}
	if len(w.latest) > 0 {
		w.dropLatest(key)
	}
	op := w.b.pb.DeleteDeferred(len(w.prefix) + len(key))
	copy(op.Key[copy(op.Key, w.prefix):], key)
	if err := op.Finish(); err != nil {
		return fmt.Errorf("storage: delete state: %w", err)
	}
	return nil
}

// StateReader reads one group's committed partition state straight from the database. It is
// safe for concurrent use and may be used while the driver commits batches.
type StateReader struct {
	db     *DB
	prefix []byte
}

// State returns a reader of a group's committed partition state.
func (db *DB) State(group uint64) *StateReader {
	return &StateReader{db: db, prefix: groupPrefix(tagState, group)}
}

// Get returns a copy of the committed value of key, and false if it is absent.
func (r *StateReader) Get(key []byte) ([]byte, bool, error) {
	if r.db.closed.Load() {
		return nil, false, ErrClosed
	}
	return r.db.getCopy(append(append(make([]byte, 0, len(r.prefix)+len(key)), r.prefix...), key...))
}

// Scan has the semantics of StateWriter.Scan over the committed state.
func (r *StateReader) Scan(lo, hi []byte, fn func(k, v []byte) bool) error {
	if r.db.closed.Load() {
		return ErrClosed
	}
	return scanState(r.db.pdb, r.prefix, lo, hi, false, fn)
}

// scanState iterates prefix+[lo, hi) of r, passing keys without the prefix;
// sparse steps with NextPrefix (state.SparseScanner).
func scanState(r pebble.Reader, prefix, lo, hi []byte, sparse bool, fn func(k, v []byte) bool) (err error) {
	lower := append(append(make([]byte, 0, len(prefix)+len(lo)), prefix...), lo...)
	var upper []byte
	if hi == nil {
		upper = state.PrefixEnd(prefix)
	} else {
		upper = append(append(make([]byte, 0, len(prefix)+len(hi)), prefix...), hi...)
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("storage: scan state: %w", err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("storage: scan state: %w", cerr)
		}
	}()
	next := it.Next
	if sparse {
		next = it.NextPrefix // every key is its own prefix: the next key, past older versions
	}
	for valid := it.First(); valid; valid = next() {
		v, verr := it.ValueAndErr()
		if verr != nil {
			return fmt.Errorf("storage: scan state: %w", verr)
		}
		if !fn(it.Key()[len(prefix):], v) {
			return nil
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("storage: scan state: %w", err)
	}
	return nil
}

// Checksum hashes a group's partition state (xxhash64 over length-prefixed keys and values in
// key order) at one consistent point and returns it with the applied index it corresponds to.
// Replicas with the same applied index must have the same sum.
func (db *DB) Checksum(group uint64) (applied uint64, sum uint64, err error) {
	if db.closed.Load() {
		return 0, 0, ErrClosed
	}
	snap := db.pdb.NewSnapshot()
	defer func() {
		if cerr := snap.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("storage: checksum: %w", cerr)
		}
	}()
	v, ok, err := getCopy(snap, raftKey(group, subApplied))
	if err != nil {
		return 0, 0, fmt.Errorf("storage: checksum group %d: %w", group, err)
	}
	if ok {
		st, err := decodeApplied(v)
		if err != nil {
			return 0, 0, fmt.Errorf("storage: checksum group %d: %w", group, err)
		}
		applied = st.Index
	}
	h := xxhash.New()
	var lenBuf [binary.MaxVarintLen64]byte
	write := func(b []byte) {
		_, _ = h.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(b)))])
		_, _ = h.Write(b)
	}
	err = scanState(snap, groupPrefix(tagState, group), nil, nil, false, func(k, v []byte) bool {
		write(k)
		write(v)
		return true
	})
	if err != nil {
		return 0, 0, fmt.Errorf("storage: checksum group %d: %w", group, err)
	}
	return applied, h.Sum64(), nil
}

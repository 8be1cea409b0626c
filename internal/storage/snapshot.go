package storage

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/state"
)

// pin is a Pebble snapshot kept for streaming one group's state at one applied index.
type pin struct {
	group    uint64
	meta     raftpb.SnapshotMetadata
	snap     *pebble.Snapshot
	refs     int       // running SnapshotData streams
	retired  bool      // replaced, expired or dropped: close when refs reaches 0
	lastUsed time.Time // when refs last dropped to 0 (or creation)
	timer    *time.Timer
}

// pinRegistry holds at most one current pin per group. Its mutex is a leaf lock.
type pinRegistry struct {
	ttl     time.Duration // release an unused pin after this long
	mu      sync.Mutex
	pins    map[uint64]*pin
	closed  bool
	streams sync.WaitGroup
}

// init prepares an empty registry.
func (r *pinRegistry) init(ttl time.Duration) {
	r.ttl = ttl
	r.pins = make(map[uint64]*pin)
}

// pin makes sure the group's current pin is at meta.Index, taking a new Pebble snapshot and
// retiring the old pin if it is not.
func (r *pinRegistry) pin(db *DB, group uint64, meta raftpb.SnapshotMetadata) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if p := r.pins[group]; p != nil {
		if p.meta.Index == meta.Index {
			if p.refs == 0 {
				p.lastUsed = time.Now()
				p.timer.Reset(r.ttl)
			}
			return nil
		}
		r.retireLocked(p)
	}
	p := &pin{group: group, meta: meta, snap: db.pdb.NewSnapshot(), lastUsed: time.Now()}
	p.timer = time.AfterFunc(r.ttl, func() { r.expire(p) })
	r.pins[group] = p
	return nil
}

// retireLocked removes p from the registry and closes it unless a stream still reads it.
func (r *pinRegistry) retireLocked(p *pin) {
	if r.pins[p.group] == p {
		delete(r.pins, p.group)
	}
	if p.retired {
		return
	}
	p.retired = true
	p.timer.Stop()
	if p.refs == 0 {
		_ = p.snap.Close() // Closing a snapshot only unregisters it; it cannot fail usefully.
	}
}

// expire releases p if it has been unused for the whole ttl.
func (r *pinRegistry) expire(p *pin) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.retired || p.refs > 0 {
		return
	}
	if idle := time.Since(p.lastUsed); idle < r.ttl {
		p.timer.Reset(r.ttl - idle)
		return
	}
	r.retireLocked(p)
}

// acquire returns the current pin of (group, index) and holds it until release.
func (r *pinRegistry) acquire(group, index uint64) (*pin, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	p := r.pins[group]
	if p == nil || p.meta.Index != index {
		return nil, fmt.Errorf("storage: group %d index %d: %w", group, index, ErrNoSnapshot)
	}
	p.refs++
	r.streams.Add(1)
	return p, nil
}

// release ends a stream started by acquire.
func (r *pinRegistry) release(p *pin) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.streams.Done()
	p.refs--
	if p.refs > 0 {
		return
	}
	if p.retired {
		_ = p.snap.Close()
		return
	}
	p.lastUsed = time.Now()
	p.timer.Reset(r.ttl)
}

// drop retires the pin of a group.
func (r *pinRegistry) drop(group uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pins[group]; p != nil {
		r.retireLocked(p)
	}
}

// close retires every pin and waits for running streams to end.
func (r *pinRegistry) close() {
	r.mu.Lock()
	r.closed = true
	for _, p := range r.pins {
		r.retireLocked(p)
	}
	r.mu.Unlock()
	r.streams.Wait()
}

// SnapshotData streams the partition state of the snapshot pinned by the group's Snapshot at
// index to w (see stream.go for the format). It returns an error wrapping ErrNoSnapshot if no
// such snapshot is pinned. It may run on any goroutine, concurrently with the driver.
func (db *DB) SnapshotData(group, index uint64, w io.Writer) (err error) {
	p, err := db.pins.acquire(group, index)
	if err != nil {
		return err
	}
	defer db.pins.release(p)
	sw, err := newStreamWriter(w)
	if err != nil {
		return fmt.Errorf("storage: snapshot data of group %d: %w", group, err)
	}
	var werr error
	err = scanState(p.snap, groupPrefix(tagState, group), nil, nil, false, func(k, v []byte) bool {
		werr = sw.pair(k, v)
		return werr == nil
	})
	if err = errors.Join(err, werr); err == nil {
		err = sw.finish()
	}
	if err != nil {
		return fmt.Errorf("storage: snapshot data of group %d: %w", group, err)
	}
	return nil
}

// PreparedSnapshot is a received snapshot turned into an unapplied Pebble batch, ready to be
// merged into a driver Batch with ApplySnapshot. It must be closed.
type PreparedSnapshot struct {
	group uint64
	meta  raftpb.SnapshotMetadata
	pb    *pebble.Batch
}

// Metadata returns the snapshot metadata the snapshot was prepared with.
func (p *PreparedSnapshot) Metadata() raftpb.SnapshotMetadata { return p.meta }

// Close discards the prepared writes (they stay in any Batch they were applied to).
func (p *PreparedSnapshot) Close() {
	if p.pb != nil {
		_ = p.pb.Close() // Closing a batch only returns it to Pebble's pool.
		p.pb = nil
	}
}

// PrepareSnapshot reads a snapshot stream written by SnapshotData and builds the writes that
// replace a group's log and partition state with it: delete every log entry and all partition
// state, write the received pairs, the applied state (meta.Index, meta.Term, meta.ConfState)
// and the truncation point (FirstIndex becomes meta.Index+1, the term of meta.Index is
// meta.Term). The hard state is kept. It is meant to run off the driver goroutine. A
// malformed, truncated or corrupt stream is refused with an error wrapping
// ErrCorruptSnapshot. If r is not an io.ByteReader it is buffered and may be read past the
// end of the stream.
func (db *DB) PrepareSnapshot(group uint64, meta raftpb.SnapshotMetadata, r io.Reader) (*PreparedSnapshot, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	if meta.Index == 0 {
		return nil, fmt.Errorf("storage: prepare snapshot of group %d: empty snapshot metadata", group)
	}
	pb := db.pdb.NewBatch()
	ok := false
	defer func() {
		if !ok {
			_ = pb.Close()
		}
	}()
	if err := buildSnapshotBatch(pb, group, meta, r); err != nil {
		return nil, fmt.Errorf("storage: prepare snapshot of group %d at %d: %w", group, meta.Index, err)
	}
	ok = true
	meta.ConfState = cloneConfState(meta.ConfState)
	return &PreparedSnapshot{group: group, meta: meta, pb: pb}, nil
}

// buildSnapshotBatch fills pb with the writes of PrepareSnapshot.
func buildSnapshotBatch(pb *pebble.Batch, group uint64, meta raftpb.SnapshotMetadata, r io.Reader) error {
	logLo, logHi := logSpan(group)
	if err := pb.DeleteRange(logLo, logHi, nil); err != nil {
		return err
	}
	prefix := groupPrefix(tagState, group)
	if err := pb.DeleteRange(prefix, state.PrefixEnd(prefix), nil); err != nil {
		return err
	}
	err := readStream(r, func(k, v []byte) error {
		op := pb.SetDeferred(len(prefix)+len(k), len(v))
		copy(op.Key[copy(op.Key, prefix):], k)
		copy(op.Value, v)
		return op.Finish()
	})
	if err != nil {
		return err
	}
	st := AppliedState{Index: meta.Index, Term: meta.Term, ConfState: meta.ConfState}
	val := make([]byte, appliedSize(&st))
	if err := encodeApplied(val, &st); err != nil {
		return err
	}
	if err := pb.Set(raftKey(group, subApplied), val, nil); err != nil {
		return err
	}
	var trunc [16]byte
	encodeTrunc(trunc[:], meta.Index, meta.Term)
	return pb.Set(raftKey(group, subTrunc), trunc[:], nil)
}

// ApplySnapshot merges a prepared snapshot into the batch: once committed, the group's log is
// empty with FirstIndex meta.Index+1, its partition state is the snapshot's and its applied
// state is the snapshot metadata. Apply it before any other write to the group in the same
// batch (entries appended after it in the batch are kept). It returns raft.ErrSnapOutOfDate if
// the group has already applied meta.Index.
func (b *Batch) ApplySnapshot(g *GroupStorage, p *PreparedSnapshot) error {
	if p == nil || p.pb == nil {
		return errors.New("storage: apply of a closed prepared snapshot")
	}
	if p.group != g.id {
		return fmt.Errorf("storage: snapshot prepared for group %d applied to group %d", p.group, g.id)
	}
	d, err := b.delta(g)
	if err != nil {
		return err
	}
	if p.meta.Index <= d.st.applied.Index {
		return fmt.Errorf("storage: group %d: snapshot at %d, applied %d: %w", g.id, p.meta.Index, d.st.applied.Index, raft.ErrSnapOutOfDate)
	}
	if err := b.pb.Apply(p.pb, nil); err != nil {
		return fmt.Errorf("storage: group %d: apply snapshot: %w", g.id, err)
	}
	if d.state != nil {
		// The snapshot replaces the group's state: values stored lazily
		// before it are gone, as Set's are under its range deletion.
		clear(d.state.latest)
		d.state.latest = d.state.latest[:0]
	}
	d.st.truncIndex, d.st.truncTerm, d.st.last = p.meta.Index, p.meta.Term, p.meta.Index
	d.st.applied = AppliedState{Index: p.meta.Index, Term: p.meta.Term, ConfState: p.meta.ConfState}
	d.ops = append(d.ops, cacheOp{kind: cacheReset})
	return nil
}

package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parley-chat/parley/internal/state"
)

// Default tuning.
const (
	defaultCacheSize = 64 << 20
	memTableSize     = 64 << 20
	defaultPinTTL    = 2 * time.Minute
)

// Options configures Open. The zero value is ready for production use.
type Options struct {
	// CacheSize is the size in bytes of Pebble's block cache; 0 means 64 MiB.
	CacheSize int64
	// NoSync makes every commit skip fsync, even those asking for it. For tests only: a crash
	// may lose acknowledged writes.
	NoSync bool
	// FS is the file system to use; nil means the operating system's. Tests may pass
	// vfs.NewMem() or vfs.NewCrashableMem().
	FS vfs.FS
	// Logger receives Pebble's log lines; nil means slog.Default().
	Logger *slog.Logger
	// MinFreeBytes is the free disk space below which CheckSpace reports ErrDiskFull; 0 means
	// DefaultMinFreeBytes.
	MinFreeBytes uint64
}

// DB is the storage of one node: one Pebble database holding the Raft logs and the partition
// state of every group the node replicates. It is safe for concurrent use, with the rule that
// only one goroutine (the Raft driver) writes through batches and calls raft.Storage methods.
type DB struct {
	pdb     *pebble.DB
	noSync  bool
	closed  atomic.Bool
	syncs   atomic.Uint64
	commits atomic.Uint64

	// Entry cache bounds of groups opened from now on; tests lower them.
	cacheEntries int
	cacheBytes   uint64

	mu     sync.Mutex // guards groups
	groups map[uint64]*GroupStorage

	pins      pinRegistry
	batchPool sync.Pool
	space     *spaceGuard
	failed    atomic.Pointer[error] // set by the first failed commit (ErrFailed)
	quar      *quarantine           // corruption found (quarantine.go)
}

// Open opens (creating if needed) the database in dir.
func Open(dir string, opts Options) (*DB, error) {
	if opts.CacheSize < 0 {
		return nil, fmt.Errorf("storage: negative cache size %d", opts.CacheSize)
	}
	if err := checkMarker(opts.FS, dir); err != nil {
		return nil, err
	}
	quar := newQuarantine(opts.FS, dir)
	db := &DB{
		noSync:       opts.NoSync,
		cacheEntries: defaultCacheEntries,
		cacheBytes:   defaultCacheBytes,
		groups:       make(map[uint64]*GroupStorage),
		space:        newSpaceGuard(opts.FS, dir, opts.MinFreeBytes),
		quar:         quar,
	}
	po := pebbleOptions(opts)
	po.EventListener = quar.eventListener()
	po.FS = readCheckFS{FS: po.FS, fail: db.failRead}
	pdb, err := pebble.Open(dir, po)
	if err != nil {
		if pebble.IsCorruptionError(err) {
			quar.mark(fmt.Errorf("%w: found opening %s: %v", ErrQuarantined, dir, err))
			return nil, quar.err
		}
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	db.pdb = pdb
	db.pins.init(defaultPinTTL)
	return db, nil
}

// pebbleOptions tunes Pebble for a write-heavy log: a large memtable so that log entries
// are usually truncated before they are flushed, an early L0 compaction trigger with a far
// write stall, and bloom filters for the point reads of state and raft metadata.
func pebbleOptions(opts Options) *pebble.Options {
	cacheSize := opts.CacheSize
	if cacheSize == 0 {
		cacheSize = defaultCacheSize
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	compactions := max(2, min(runtime.GOMAXPROCS(0)/2, 4))
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	po := &pebble.Options{
		CacheSize:                   cacheSize,
		FS:                          fs,
		FormatMajorVersion:          pebble.FormatNewest,
		MemTableSize:                memTableSize,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       2,
		L0StopWritesThreshold:       1000,
		LBaseMaxBytes:               64 << 20,
		Logger:                      pebbleLogger{logger.With("component", "pebble")},
		CompactionConcurrencyRange:  func() (int, int) { return 1, compactions },
	}
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return po
}

// Close releases the database. Snapshot streams still running are waited for, so stop the
// transport first. The DB must not be used afterwards.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return ErrClosed
	}
	db.pins.close()
	if err := db.Failed(); err != nil {
		// Pebble's commit pipeline is broken: closing it could wait
		// forever. The process is about to exit; what is durable stays.
		return err
	}
	if err := db.pdb.Close(); err != nil {
		return fmt.Errorf("storage: close: %w", err)
	}
	return nil
}

// SyncCount returns how many commits were fsynced since Open (for fsyncs-per-entry metrics).
func (db *DB) SyncCount() uint64 { return db.syncs.Load() }

// CommitCount returns how many batches were committed to Pebble since Open, synced or
// not (an empty batch commits nothing and is not counted), for commits-per-entry metrics.
func (db *DB) CommitCount() uint64 { return db.commits.Load() }

// writeOptions returns the Pebble write options for a commit, counting fsyncs.
func (db *DB) writeOptions(sync bool) *pebble.WriteOptions {
	if sync && !db.noSync {
		return pebble.Sync
	}
	return pebble.NoSync
}

// commit commits a Pebble batch and counts the fsync. A commit Pebble
// cannot complete (a WAL write or fsync failed: it calls Logger.Fatalf,
// which panics with pebbleFatal) fails the store: this commit and every
// later one return ErrFailed, nothing is retried.
func (db *DB) commit(b *pebble.Batch, sync bool) (err error) {
	if f := db.failed.Load(); f != nil {
		return *f
	}
	if err := db.QuarantineErr(); err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			pf, ok := r.(pebbleFatal)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%w: %s", ErrFailed, string(pf))
			db.failed.CompareAndSwap(nil, &err)
		}
	}()
	wo := db.writeOptions(sync)
	if err := b.Commit(wo); err != nil {
		return err
	}
	db.commits.Add(1)
	if wo.Sync {
		db.syncs.Add(1)
	}
	return nil
}

// getCopy reads a committed key; the value is a copy.
func (db *DB) getCopy(key []byte) ([]byte, bool, error) {
	return getCopy(db.pdb, key)
}

// getCopy reads key from r and copies the value.
func getCopy(r pebble.Reader, key []byte) ([]byte, bool, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("storage: get: %w", err)
	}
	out := slices.Clone(v)
	if out == nil {
		out = []byte{}
	}
	if err := closer.Close(); err != nil {
		return nil, false, fmt.Errorf("storage: get: %w", err)
	}
	return out, true, nil
}

// LoadNodeRecord returns the node record saved by SaveNodeRecord, and false if there is none.
func (db *DB) LoadNodeRecord() ([]byte, bool, error) {
	if db.closed.Load() {
		return nil, false, ErrClosed
	}
	return db.getCopy(nodeKey)
}

// SaveNodeRecord durably replaces the node record, a small blob the node keeps about itself.
func (db *DB) SaveNodeRecord(b []byte) error {
	if db.closed.Load() {
		return ErrClosed
	}
	pb := db.pdb.NewBatch()
	defer pb.Close()
	if err := pb.Set(nodeKey, b, nil); err != nil {
		return fmt.Errorf("storage: save node record: %w", err)
	}
	if err := db.commit(pb, true); err != nil {
		return fmt.Errorf("storage: save node record: %w", err)
	}
	return nil
}

// LoadNodeBlob returns the node blob saved under name by SaveNodeBlob, and
// false if there is none.
func (db *DB) LoadNodeBlob(name string) ([]byte, bool, error) {
	if db.closed.Load() {
		return nil, false, ErrClosed
	}
	return db.getCopy(nodeBlobKey(name))
}

// SaveNodeBlob durably replaces the node blob saved under name (non-empty):
// small records a node keeps about itself or its peers, beside the node
// record and, like it, never replicated.
func (db *DB) SaveNodeBlob(name string, b []byte) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if name == "" {
		return fmt.Errorf("storage: save node blob: empty name")
	}
	pb := db.pdb.NewBatch()
	defer pb.Close()
	if err := pb.Set(nodeBlobKey(name), b, nil); err != nil {
		return fmt.Errorf("storage: save node blob %s: %w", name, err)
	}
	if err := db.commit(pb, true); err != nil {
		return fmt.Errorf("storage: save node blob %s: %w", name, err)
	}
	return nil
}

// Groups lists, in ascending order, the ids of every group with anything stored (raft
// metadata, log entries or partition state).
func (db *DB) Groups() ([]uint64, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{tagRaft}, UpperBound: []byte{tagState + 1}})
	if err != nil {
		return nil, fmt.Errorf("storage: list groups: %w", err)
	}
	var ids []uint64
	for valid := it.First(); valid; {
		k := it.Key()
		if len(k) < groupPrefixLen {
			_ = it.Close()
			return nil, fmt.Errorf("storage: list groups: short key %x: %w", k, ErrCorrupt)
		}
		ids = append(ids, binary.BigEndian.Uint64(k[1:]))
		next := state.PrefixEnd(k[:groupPrefixLen])
		if next == nil {
			break
		}
		valid = it.SeekGE(next)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("storage: list groups: %w", err)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// Group returns the raft.Storage of a group, loading its metadata on first use. Nothing is
// written until a batch writes to the group. Repeated calls return the same *GroupStorage.
func (db *DB) Group(id uint64) (*GroupStorage, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if g, ok := db.groups[id]; ok {
		return g, nil
	}
	g, err := db.loadGroup(id)
	if err != nil {
		return nil, fmt.Errorf("storage: open group: %w", err)
	}
	db.groups[id] = g
	return g, nil
}

// DestroyGroup durably deletes everything stored for a group (log, hard state, applied
// state, partition state) and drops its pinned snapshot. A *GroupStorage obtained earlier
// stays valid and describes an empty group. No batch touching the group may be open.
//
// In the same commit it records replica as removed from this node (RemovedReplica): the
// group's leader may still count what that replica acknowledged, so it must never come back
// empty under the same id.
func (db *DB) DestroyGroup(id, replica uint64) error {
	if db.closed.Load() {
		return ErrClosed
	}
	removed, err := db.RemovedReplica(id)
	if err != nil {
		return fmt.Errorf("storage: destroy group %d: %w", id, err)
	}
	pb := db.pdb.NewBatch()
	defer pb.Close()
	for _, tag := range []byte{tagRaft, tagState} {
		p := groupPrefix(tag, id)
		if err := pb.DeleteRange(p, state.PrefixEnd(p), nil); err != nil {
			return fmt.Errorf("storage: destroy group %d: %w", id, err)
		}
	}
	if replica > removed {
		if err := pb.Set(groupPrefix(tagRemoved, id), binary.BigEndian.AppendUint64(nil, replica), nil); err != nil {
			return fmt.Errorf("storage: destroy group %d: %w", id, err)
		}
	}
	if err := db.commit(pb, true); err != nil {
		return fmt.Errorf("storage: destroy group %d: %w", id, err)
	}
	db.pins.drop(id)
	db.mu.Lock()
	g := db.groups[id]
	db.mu.Unlock()
	if g != nil {
		g.clear()
	}
	return nil
}

// RemovedReplica returns the highest replica id of group id that DestroyGroup deleted on
// this node, or 0. Replica ids only grow, so a replica of the group with an id at or below
// it was removed from here and may not be opened again.
func (db *DB) RemovedReplica(id uint64) (uint64, error) {
	if db.closed.Load() {
		return 0, ErrClosed
	}
	v, ok, err := db.getCopy(groupPrefix(tagRemoved, id))
	if err != nil || !ok {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("storage: removed replica of group %d: %d bytes, want 8", id, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// pebbleLogger sends Pebble's log lines to slog.
type pebbleLogger struct{ l *slog.Logger }

// Infof implements pebble.Logger.
func (p pebbleLogger) Infof(format string, args ...any) { p.l.Debug(fmt.Sprintf(format, args...)) }

// Errorf implements pebble.Logger.
func (p pebbleLogger) Errorf(format string, args ...any) { p.l.Error(fmt.Sprintf(format, args...)) }

// Fatalf implements pebble.Logger. Pebble calls it on broken invariants and on a commit it
// cannot complete, and expects no return: it panics with pebbleFatal, which DB.commit turns
// into ErrFailed (anywhere else the process stops).
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg)
	panic(pebbleFatal(msg))
}

// pebbleFatal is the panic value of pebbleLogger.Fatalf.
type pebbleFatal string

// Failed returns the error that failed the store (ErrFailed, wrapped), or
// nil while it works.
func (db *DB) Failed() error {
	if f := db.failed.Load(); f != nil {
		return *f
	}
	return nil
}

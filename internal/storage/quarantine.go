package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrQuarantined is returned once the store found data that fails its
// checksum (a flipped bit on the disk, a bad sector returned as data): what
// else it holds cannot be trusted, so it takes no more writes, and its
// directory is marked (QuarantineFile) so that no later Open uses it. The
// node must be rebuilt from its peers on an empty data directory.
var ErrQuarantined = errors.New("storage: the store holds corrupt data and is quarantined")

// QuarantineFile is the file in the data directory that marks it
// quarantined; it holds the reason.
const QuarantineFile = "QUARANTINED"

// Scrub pacing: a full read of the store yields the CPU and the disk every
// scrubChunk keys for scrubPause, so it never competes with the Raft loop.
// (scrubChunk is a variable so the tests can make chunks small.)
var scrubChunk = 4096

const scrubPause = 2 * time.Millisecond

// quarantine remembers the first corruption found and marks the data
// directory. Pebble reports every checksum failure it meets — reads,
// iterators, compactions — through its DataCorruption event.
type quarantine struct {
	fs   vfs.FS
	dir  string
	once sync.Once
	done chan struct{}
	err  error // set before done is closed
}

func newQuarantine(fs vfs.FS, dir string) *quarantine {
	if fs == nil {
		fs = vfs.Default
	}
	return &quarantine{fs: fs, dir: dir, done: make(chan struct{})}
}

// eventListener returns the Pebble listener that reports corruption here.
func (q *quarantine) eventListener() *pebble.EventListener {
	return &pebble.EventListener{DataCorruption: func(info pebble.DataCorruptionInfo) {
		q.mark(fmt.Errorf("%w: %v (file %s)", ErrQuarantined, info.Details, info.Path))
	}}
}

// mark quarantines the store for err, once: it writes the marker file
// (synced) and closes done.
func (q *quarantine) mark(err error) {
	q.once.Do(func() {
		q.err = err
		if werr := writeMarker(q.fs, q.fs.PathJoin(q.dir, QuarantineFile), err.Error()); werr != nil {
			q.err = fmt.Errorf("%w (and the data directory could not be marked: %v)", err, werr)
		}
		close(q.done)
	})
}

// writeMarker writes text to path and syncs it and its directory.
func writeMarker(fs vfs.FS, path, text string) error {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, text+"\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	d, err := fs.OpenDir(fs.PathDir(path))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkMarker returns ErrQuarantined, with the recorded reason, when dir
// was quarantined.
func checkMarker(fs vfs.FS, dir string) error {
	if fs == nil {
		fs = vfs.Default
	}
	f, err := fs.Open(fs.PathJoin(dir, QuarantineFile))
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("storage: read the quarantine marker: %w", err)
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	return fmt.Errorf("%w since an earlier start: %s", ErrQuarantined, trimNewline(string(b)))
}

func trimNewline(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}

// Quarantined returns a channel closed when the store found corrupt data
// (then QuarantineErr says what and where).
func (db *DB) Quarantined() <-chan struct{} { return db.quar.done }

// QuarantineErr returns why the store was quarantined (ErrQuarantined,
// wrapped), or nil.
func (db *DB) QuarantineErr() error {
	select {
	case <-db.quar.done:
		return db.quar.err
	default:
		return nil
	}
}

// Scrub reads every key and value of the store, so that every table block
// is read and its checksum verified (corruption is reported through
// Quarantined, like any other read's). It reads scrubChunk keys per
// iterator and pauses between them, so a scrub of a large store neither
// holds the CPU nor pins old tables (which compactions could not delete
// while an iterator reads them). It returns ErrQuarantined (wrapped) when
// it found corruption, the context's error if it was stopped, nil
// otherwise.
func (db *DB) Scrub(ctx context.Context) error {
	var from []byte
	for {
		next, err := db.scrubChunk(ctx, from)
		if err != nil || next == nil {
			return db.scrubErr(err)
		}
		from = next
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(scrubPause):
		}
	}
}

// scrubChunk reads up to scrubChunk keys and values from the first key at
// or after from, and returns the key to go on from (nil at the end).
func (db *DB) scrubChunk(ctx context.Context, from []byte) (next []byte, err error) {
	it, err := db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: from})
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if _, err := it.ValueAndErr(); err != nil {
			return nil, err
		}
		if n++; n == scrubChunk {
			if !it.Next() {
				return nil, it.Error()
			}
			return append([]byte(nil), it.Key()...), it.Error()
		}
	}
	return nil, it.Error()
}

// scrubErr turns a corruption error of a scrub into the quarantine.
func (db *DB) scrubErr(err error) error {
	if err == nil {
		return db.QuarantineErr()
	}
	if pebble.IsCorruptionError(err) {
		db.quar.mark(fmt.Errorf("%w: %v", ErrQuarantined, err))
		return db.QuarantineErr()
	}
	return fmt.Errorf("storage: scrub: %w", err)
}

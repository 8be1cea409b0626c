// Package state declares how deterministic state machines read and write the
// replicated state of one partition. The storage package implements these
// interfaces on Pebble; domain packages (kv, chat, queue...) use them without
// knowing about Raft or Pebble; tests use Mem.
package state

// Reader reads one partition's state. Keys are relative to the partition.
//
// Every read through one Reader sees the same moment: the state after one
// applied index, whatever is applied meanwhile. A read function handed a
// Reader (Replicator.Read) may therefore read a record, then scan what it
// names, and never see the two disagree. Implementations: a Pebble snapshot
// of a local replica, one snapshot of a remote replica held across calls
// (internal/partition), a Writer within one Apply (which also sees the
// batch's own earlier writes), Mem (not concurrent).
type Reader interface {
	// Get returns a copy of the value stored under key and whether it exists.
	Get(key []byte) ([]byte, bool, error)
	// Scan calls fn for every key in [lo, hi) in ascending key order; a nil
	// hi means "to the end". k and v are valid only during the call. fn
	// returns false to stop early.
	Scan(lo, hi []byte, fn func(k, v []byte) bool) error
}

// SparseScanner is a Reader that can also scan a range of few keys that are
// each rewritten often (records holding counters, such as every queue's
// record): Pebble keeps every version of a key in its memtables until they
// are flushed, and Scan steps over them one by one, while ScanSparse seeks
// past them. It visits what Scan visits; over keys written once it is
// slower than Scan.
type SparseScanner interface {
	ScanSparse(lo, hi []byte, fn func(k, v []byte) bool) error
}

// ScanSparse scans [lo, hi) of r as Scan does, with r's ScanSparse when it
// has one (see SparseScanner).
func ScanSparse(r Reader, lo, hi []byte, fn func(k, v []byte) bool) error {
	if s, ok := r.(SparseScanner); ok {
		return s.ScanSparse(lo, hi, fn)
	}
	return r.Scan(lo, hi, fn)
}

// Writer reads and writes one partition's state inside one Apply. Reads see
// the writes made earlier in the same batch.
type Writer interface {
	Reader
	// Set stores value under key.
	Set(key, value []byte) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(key []byte) error
}

// LatestSetter is a Writer that can store a key's value lazily: SetLatest
// is Set for a key the same batch is likely to set again (a record every
// command rewrites), where only the last value needs to reach the store.
// Every read through the Writer sees the value at once, and a scan covering
// the key writes it first, so what Apply observes and what the batch
// commits are exactly what Set would have given.
type LatestSetter interface {
	SetLatest(key, value []byte) error
}

// SetLatest stores value under key in w: lazily when w is a LatestSetter,
// by Set otherwise.
func SetLatest(w Writer, key, value []byte) error {
	if ls, ok := w.(LatestSetter); ok {
		return ls.SetLatest(key, value)
	}
	return w.Set(key, value)
}

// Meta describes the committed command being applied.
type Meta struct {
	// Partition is the Raft group id of the partition.
	Partition uint64
	// Index is the Raft log index of the command.
	Index uint64
	// TimeMs is the leader-stamped wall time in Unix milliseconds. It never
	// decreases within a partition (Apply clamps it), so every room and queue
	// in the partition sees non-decreasing times.
	TimeMs int64
}

// Applier applies committed commands of one domain. Apply must be
// deterministic: it may depend only on the command, meta and the state it
// reads through w; no clock, randomness or I/O. The returned bytes are the
// command's result, handed to the proposer and kept for idempotent retries.
// An error means the state could not be read or written (the node stops);
// domain-level refusals (not found, conflict) are encoded in the result.
type Applier interface {
	Apply(w Writer, meta Meta, cmd []byte) ([]byte, error)
}

// Resetter is an Applier that remembers something of the state it applies
// to, to read less of it. Its results never depend on what it remembers.
// The engine calls Reset before the first Apply after the partition's state
// was loaded or replaced under it: when the group opened and after a
// snapshot was installed.
type Resetter interface {
	Reset()
}

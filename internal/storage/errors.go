package storage

import "errors"

// Errors returned by this package. Callers test for them with errors.Is; every other error is
// an internal failure (usually of the disk) and is wrapped with context.
var (
	// ErrClosed is returned by every operation on a closed DB.
	ErrClosed = errors.New("storage: database closed")
	// ErrNoSnapshot is returned by SnapshotData when no snapshot is pinned for the requested
	// group and index (it was never taken, was replaced by a newer one or expired).
	ErrNoSnapshot = errors.New("storage: no pinned snapshot for this group and index")
	// ErrCorruptSnapshot is returned by PrepareSnapshot when the stream is malformed, truncated
	// or fails its checksum.
	ErrCorruptSnapshot = errors.New("storage: corrupt or truncated snapshot stream")
	// ErrCorrupt is returned when a stored record cannot be decoded.
	ErrCorrupt = errors.New("storage: corrupt record")
	// ErrFailed is returned by every write once a commit failed (a WAL
	// write or fsync that returned an error) or a read of the store's files
	// failed with EIO (readfail.go): what the files hold is then unknown,
	// so the store takes no more writes and the node must restart from
	// what is durable. A failed fsync is never retried.
	ErrFailed = errors.New("storage: the store failed a write or a read of its files; restart the node")
)

package transport

import "errors"

// ErrUnreachable is wrapped by every error caused by failing to reach a peer:
// a refused or failed dial, a broken connection, a peer isolated by Faults or
// a failed TLS handshake.
var ErrUnreachable = errors.New("peer unreachable")

// ErrClusterMismatch is wrapped by errors reporting that a peer refused the
// handshake because its cluster id differs from ours, or because a Raft or
// snapshot stream was attempted while one side had no cluster id yet.
var ErrClusterMismatch = errors.New("cluster id mismatch")

// ErrStaleData is wrapped by errors reporting that a peer refused the
// handshake because this node's Boot shows its data went back in time
// (Config.CheckBoot on the peer): it was restarted from an old copy of its
// data directory.
var ErrStaleData = errors.New("stale data")

// ErrClosed is returned by operations on a Transport after Close.
var ErrClosed = errors.New("transport closed")

// RemoteError is the error a peer's Handler.HandleCall or
// Handler.HandleSnapshot returned, carried back to the caller as text. Use
// errors.As to recognise it.
type RemoteError struct {
	// Message is the remote error's Error() text.
	Message string
}

// Error returns the remote message prefixed with "remote: ".
func (e *RemoteError) Error() string { return "remote: " + e.Message }

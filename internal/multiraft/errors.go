package multiraft

import (
	"errors"
	"fmt"
)

// The engine's own errors: conditions of replication that callers act on
// (retry, ask another node), never users' conditions. Refusals meant for
// users (a full disk, an invalid proposal id) are *errs.Error values.

// ErrClosed is returned by calls on a closed engine.
var ErrClosed = errors.New("multiraft: engine closed")

// ErrReplicaRemoved is returned when asked to open a replica that was
// removed from this node and destroyed (storage.DB.RemovedReplica): its
// group's leader may still count entries it acknowledged, so it never comes
// back empty under the same id. The node holds a newer replica or none.
var ErrReplicaRemoved = errors.New("multiraft: replica was removed from this node")

// NotLeaderError says this node's replica of a group is not its leader; Leader
// is the replica id of the leader it knows of, or 0.
type NotLeaderError struct {
	Group  uint64
	Leader uint64
}

// Error implements error.
func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("multiraft: not the leader of group %d (leader replica %d)", e.Group, e.Leader)
}

// NoReplicaError says this node holds no replica of a group: it never had
// one, or the replica was closed (removed, moved away) before or while the
// call ran. The caller asks a node that holds one. It is not errs.NotFound:
// that code is for users' things (a key, a room), and a router must never
// mistake a user's "not found" for a reason to retry elsewhere, nor the
// reverse.
type NoReplicaError struct {
	Group uint64
}

// Error implements error.
func (e *NoReplicaError) Error() string {
	return fmt.Sprintf("multiraft: no replica of group %d on this node", e.Group)
}

// IsNoReplica reports whether err says the node asked holds no replica.
func IsNoReplica(err error) bool {
	var nr *NoReplicaError
	return errors.As(err, &nr)
}

package partition

import (
	"context"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/storage"
)

// localSnapshot is one snapshot of this node's replica of a group, with the
// replica's incarnation when it was taken.
type localSnapshot struct {
	*storage.StateSnapshot
	engine  *multiraft.Engine
	group   uint64
	replica multiraft.Incarnation
	staleMs int64
}

// snapshotLocal takes a snapshot of this node's replica of group p: after a
// read index when linearizable (the snapshot then holds every write
// acknowledged before the call), else with how stale the replica may be
// (ms). It fails with a multiraft.NoReplicaError when the node holds no
// replica, with a read-index failure as it came, and with Unavailable when
// the replica was closed — its state destroyed, perhaps opened again empty —
// before the snapshot was taken (see DESIGN.md, "Reads while replicas
// move").
func (d *Deps) snapshotLocal(ctx context.Context, p uint64, linearizable bool) (*localSnapshot, error) {
	replica := d.Engine.Incarnation(p)
	if !replica.Held() {
		return nil, &multiraft.NoReplicaError{Group: p}
	}
	var staleMs int64
	if linearizable {
		if lead, leads := d.Engine.Leader(p); !leads && (lead == 0 || d.DB.CheckSpace() != nil) {
			// Read at the leader (or another replica) instead when this
			// replica would not reach the read index soon:
			//   - it knows no leader: it may be cut off from the others
			//     (a restarted pod whose new address they do not resolve
			//     yet) while it can still call them, and its read index
			//     would wait for a leader whose messages cannot reach it;
			//   - it is a follower on a full disk, which takes no new
			//     commands (multiraft/diskfull.go).
			return nil, &multiraft.NoReplicaError{Group: p}
		}
		if err := d.Engine.ReadIndex(ctx, p); err != nil {
			return nil, err
		}
	} else {
		staleMs, _ = d.Engine.StaleMs(p)
	}
	snap, err := d.DB.StateSnapshot(p)
	if err != nil {
		return nil, err
	}
	s := &localSnapshot{StateSnapshot: snap, engine: d.Engine, group: p, replica: replica, staleMs: max(staleMs, 0)}
	if !s.current() {
		s.close()
		return nil, errClosedDuringRead(p)
	}
	return s, nil
}

// current reports whether the replica the snapshot was taken of is still
// open. A replica is closed before its state is destroyed, so a snapshot
// taken while current is of its full state.
func (s *localSnapshot) current() bool { return s.engine.Incarnation(s.group) == s.replica }

func (s *localSnapshot) close() { _ = s.StateSnapshot.Close() }

func errClosedDuringRead(p uint64) error {
	return errs.New(errs.Unavailable, "replica of partition %d closed during the read", p)
}

package node

import (
	"context"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/state"
)

// readLocal runs fn on this node's replica of group p: after a read index
// when linearizable, else with how stale the replica may be (ms). It
// returns a multiraft.NoReplicaError when the node holds no replica, a read-index
// failure as it came, and an Unavailable error when the replica was closed
// — its state destroyed, perhaps opened again empty — while fn read it
// (what fn saw is then worthless and the read must be tried again; see
// DESIGN.md, "Reads while replicas move"). fn's own error is fnErr.
func (n *Node) readLocal(ctx context.Context, p uint64, linearizable bool, fn func(state.Reader) error) (staleMs int64, fnErr, err error) {
	replica := n.engine.Incarnation(p)
	if !replica.Held() {
		return 0, nil, &multiraft.NoReplicaError{Group: p}
	}
	if linearizable {
		if err := n.engine.ReadIndex(ctx, p); err != nil {
			return 0, nil, err
		}
	} else {
		staleMs, _ = n.engine.StaleMs(p)
	}
	fnErr = fn(n.db.State(p))
	if n.engine.Incarnation(p) != replica {
		return 0, nil, errs.New(errs.Unavailable, "replica of partition %d closed during the read", p)
	}
	return max(staleMs, 0), fnErr, nil
}

package node

import (
	"context"
	"errors"
	"github.com/parley-chat/parley/internal/audit"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/placement"
)

// DrainNode implements api.ClusterAdmin: it refuses a drain that cannot
// complete (placement.CheckDrain), marks the node draining in the map and
// returns the moves that empty it; the controller carries them out.
func (n *Node) DrainNode(ctx context.Context, id string) ([]api.Move, error) {
	m := n.Map()
	if m == nil {
		return nil, errs.New(errs.Unavailable, "this node does not know the cluster map yet")
	}
	if _, ok := m.Node(id); !ok {
		return nil, errs.New(errs.NotFound, "no node %q in the cluster", id)
	}
	if err := placement.CheckDrain(m, id); err != nil {
		if errors.Is(err, placement.ErrDrainImpossible) {
			return nil, errs.New(errs.Conflict, "%s", err.Error())
		}
		return nil, errs.New(errs.Invalid, "%s", err.Error())
	}
	if err := n.proposeAdmin(ctx, placement.SetNodeState{NodeID: id, State: placement.NodeDraining}); err != nil {
		return nil, err
	}
	n.log.Info("drain started", "drained", id)
	return replicaMoves(m, id, "planned"), nil
}

// RemoveNode implements api.ClusterAdmin: a drained node, or one this
// node's gossip sees dead, leaves the map with whatever replicas it still
// holds; any other is refused.
func (n *Node) RemoveNode(ctx context.Context, id string) error {
	m := n.Map()
	if m == nil {
		return errs.New(errs.Unavailable, "this node does not know the cluster map yet")
	}
	nd, ok := m.Node(id)
	if !ok {
		return errs.New(errs.NotFound, "no node %q in the cluster", id)
	}
	if id == n.cfg.ID {
		return errs.New(errs.Conflict, "node %s cannot remove itself: ask another node", id)
	}
	state := n.MemberState(id)
	dead := state == "dead" || state == "left"
	if held := m.HeldBy(id); !dead && (nd.State != placement.NodeDraining || held.Total() > 0) {
		return errs.New(errs.Conflict, "node %s is %s and holds %s: drain it first (or it must be dead)", id, state, held)
	}
	if err := n.proposeAdmin(ctx, placement.RemoveNode{NodeID: id, Dead: dead}); err != nil {
		return err
	}
	n.log.Info("node removed from the cluster", "removed", id, "was", state)
	n.audit.Record(audit.Event{Kind: audit.KindNodeRemoved, Target: id, Detail: "removed while " + state + "; its certificate is revoked"})
	return nil
}

// proposeAdmin proposes an operator's command to the metadata group through
// its leader; a refusal is an errs.Conflict with the map's reason, wrapping
// the refusal's placement.Code (errors.Is).
func (n *Node) proposeAdmin(ctx context.Context, cmd placement.Command) error {
	b, err := n.router.Propose(ctx, placement.MetaGroup, "", placement.Encode(cmd))
	if err != nil {
		return err
	}
	res, err := placement.DecodeResult(b)
	if err != nil {
		return err
	}
	if res.Err() != nil {
		return errs.Wrap(errs.Conflict, res.Code, "%s", res.Error)
	}
	return nil
}

// nodeStatusState is a node's state in the cluster status: draining when
// the map says so, else what gossip sees (suspect, dead, left, or unknown
// for a node gossip never met: clients fail over only to alive nodes, and a
// map entry no member gossips with is not one), else whether it answered
// the status call (alive or unreachable).
func nodeStatusState(answered, gossip, mapState string) string {
	switch {
	case mapState == placement.NodeDraining:
		return "draining"
	case gossip == "suspect" || gossip == "dead" || gossip == "left" || gossip == "unknown":
		return gossip
	}
	return answered
}

// drainMoves lists the replicas still on a draining node as moves in
// progress.
func drainMoves(m *placement.Map, nd placement.Node) []api.Move {
	if nd.State != placement.NodeDraining {
		return nil
	}
	return replicaMoves(m, nd.ID, "draining")
}

// replicaMoves lists the replicas a node must hand over before it is
// drained (see placement.Map.Holding) as moves off it.
func replicaMoves(m *placement.Map, node, phase string) []api.Move {
	var out []api.Move
	for _, g := range m.Groups {
		if r, ok := m.ReplicaOn(g.ID, node); ok && (g.ID != placement.MetaGroup || r.Role == placement.RoleVoter) {
			out = append(out, api.Move{Partition: g.ID, From: node, Phase: phase})
		}
	}
	return out
}

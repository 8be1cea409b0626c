package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/parley-chat/parley/internal/partition"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
)

// controlInterval is how often the metadata leader re-plans placement.
const controlInterval = 300 * time.Millisecond

// maxMoves bounds the replicas being added at once, cluster-wide, and the
// leadership transfers per round.
const maxMoves = 4

// controlLoop runs the placement controller while this node leads the
// metadata group: every round it gathers each group's applied membership
// from the groups' leaders, plans with placement.Plan and carries out the
// steps (map changes through the metadata group, leadership transfers by
// asking the group's leader).
func (n *Node) controlLoop() {
	t := time.NewTicker(controlInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
		if err := n.controlOnce(ctx); err != nil && ctx.Err() == nil {
			n.log.Debug("placement round", "err", err)
		}
		cancel()
	}
}

func (n *Node) controlOnce(ctx context.Context) error {
	st, ok, err := n.engine.GroupStatus(ctx, placement.MetaGroup)
	if err != nil || !ok || !st.IsLeader {
		return err
	}
	m := n.Map()
	if m == nil {
		return nil
	}
	if m.Term < st.Term {
		// A new leader first fences: once its term is in the map, the map
		// holds every command a deposed leader got into the log, and any
		// later one of theirs is refused.
		return n.proposeMeta(ctx, placement.Fence{Term: st.Term})
	}
	health := n.health(m)
	view := placement.View{
		Map: m, Health: health, Applied: n.groupViews(ctx, m, health),
		DeadAfter: n.cfg.DeadAfter, MaxMoves: maxMoves,
	}
	steps, planErr := placement.Plan(view)
	if planErr != nil {
		n.log.Debug("drain cannot complete", "err", planErr)
	}
	for _, s := range steps {
		if err := n.execStep(ctx, m, view.Applied, s, st.Term); err != nil {
			if errors.Is(err, placement.CodeStaleTerm) {
				return err // a newer metadata leader fenced this round off
			}
			n.log.Debug("placement step failed", "step", s.String(), "err", err)
		}
	}
	n.noteNodes(m)
	return nil
}

// execStep carries out one step of the plan.
func (n *Node) execStep(ctx context.Context, m *placement.Map, applied map[uint64]placement.GroupView, s placement.Step, term uint64) error {
	if s.Kind == placement.StepTransferLeader {
		g, _ := m.Group(s.Group)
		from, ok := replicaNodeOf(g, applied[s.Group].Leader)
		if !ok {
			return fmt.Errorf("group %d: leader unknown", s.Group)
		}
		if err := n.transferLeader(ctx, m, from, s.Group, s.Replica); err != nil {
			return err
		}
		n.heal.events.add(EventLeaderMoved, s.Node, s.Group, fmt.Sprintf("from %s: %s", from, s.Reason))
		return nil
	}
	if err := n.proposeMeta(ctx, s.Command(term)); err != nil {
		return err
	}
	kind := map[placement.StepKind]string{
		placement.StepAddReplica: EventReplicaAdded, placement.StepPromote: EventReplicaPromoted,
		placement.StepDemote: EventReplicaDemoted, placement.StepRemoveReplica: EventReplicaRemoved,
	}[s.Kind]
	n.heal.events.add(kind, s.Node, s.Group, s.Reason)
	n.log.Info("placement changed", "step", string(s.Kind), "group", s.Group, "replica_node", s.Node, "replica", s.Replica, "reason", s.Reason)
	return nil
}

// proposeMeta proposes a fenced command to the metadata group through the
// local replica, which must lead it: a command is never forwarded to
// another leader, who decides for itself.
func (n *Node) proposeMeta(ctx context.Context, cmd placement.Command) error {
	b, err := n.engine.Propose(ctx, placement.MetaGroup, multiraft.NewProposalID(), placement.Encode(cmd))
	if err != nil {
		return err
	}
	res, err := placement.DecodeResult(b)
	if err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("%s refused: %w", cmd.Op(), err)
	}
	return nil
}

// transferLeader asks the node leading group g to hand leadership to
// replica to.
func (n *Node) transferLeader(ctx context.Context, m *placement.Map, from string, g, to uint64) error {
	if from == n.cfg.ID {
		return n.engine.TransferLeader(ctx, g, to)
	}
	nd, ok := m.Node(from)
	if !ok {
		return fmt.Errorf("no node %s", from)
	}
	body, _ := json.Marshal(transferRequest{Group: g, To: to})
	var rep partition.Reply
	if err := n.call(ctx, nd.Addr, methodTransfer, body, &rep); err != nil {
		return err
	}
	return rep.Err(g)
}

// transferRequest asks a group's leader to hand leadership over.
type transferRequest struct {
	Group uint64 `json:"group"`
	To    uint64 `json:"to"`
}

// callTransfer answers a transfer call: this node's replica, the group's
// leader, hands leadership over.
func (n *Node) callTransfer(ctx context.Context, _ string, body []byte) (partition.Reply, error) {
	var req transferRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return partition.Reply{}, fmt.Errorf("bad transfer request: %w", err)
	}
	return partition.ReplyOf(nil, n.engine.TransferLeader(ctx, req.Group, req.To)), nil
}

// groupViews gathers the applied state of every group from its leader:
// this node's own replicas and those of every node gossip does not see
// dead, asked in parallel (a node that does not answer in time leaves its
// groups out, so the plan leaves them alone).
func (n *Node) groupViews(ctx context.Context, m *placement.Map, health map[string]placement.NodeHealth) map[uint64]placement.GroupView {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var mu sync.Mutex
	best := map[uint64]multiraft.GroupStatus{}
	var wg sync.WaitGroup
	for _, nd := range m.Nodes {
		if health[nd.ID].State == placement.HealthDead {
			continue
		}
		wg.Go(func() {
			sts, err := n.nodeStatus(ctx, nd)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, st := range sts {
				if b, ok := best[st.Group]; st.IsLeader && (!ok || st.Term > b.Term) {
					best[st.Group] = st
				}
			}
		})
	}
	wg.Wait()
	out := make(map[uint64]placement.GroupView, len(best))
	for g, st := range best {
		out[g] = groupView(st)
	}
	return out
}

// noteNodes records, on the metadata leader, the node changes of the map
// since the last round: drains started and finished, nodes removed.
func (n *Node) noteNodes(m *placement.Map) {
	h := &n.heal
	h.ctlMu.Lock()
	defer h.ctlMu.Unlock()
	seen := map[string]string{}
	for _, nd := range m.Nodes {
		state := nd.State
		if state == placement.NodeDraining && m.Holding(nd.ID) == 0 {
			state = "drained"
		}
		seen[nd.ID] = state
		old, known := h.nodeStates[nd.ID]
		switch {
		case !known || old == state:
		case state == placement.NodeDraining && old == placement.NodeActive:
			h.events.add(EventDrainStarted, nd.ID, 0, m.HeldBy(nd.ID).String()+" to move")
		case state == "drained":
			h.events.add(EventDrainFinished, nd.ID, 0, "the node holds no replica: it may be removed")
			n.log.Info("node drained", "drained", nd.ID)
		}
	}
	for id := range h.nodeStates {
		if _, ok := seen[id]; !ok {
			h.events.add(EventNodeRemoved, id, 0, "forgotten by the cluster")
		}
	}
	h.nodeStates = seen
}

func replicaNodeOf(g *placement.Group, id uint64) (string, bool) {
	if g == nil {
		return "", false
	}
	for _, r := range g.Replicas {
		if r.ID == id {
			return r.Node, true
		}
	}
	return "", false
}

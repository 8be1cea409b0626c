package node

import (
	"context"
	"encoding/json"
	"github.com/parley-chat/parley/internal/compat"
	"github.com/parley-chat/parley/internal/partition"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
)

// localStatus returns the status of every replica on this node.
func (n *Node) localStatus(ctx context.Context) ([]multiraft.GroupStatus, error) {
	return n.engine.Status(ctx)
}

// callStatus answers the internal status call.
func (n *Node) callStatus(ctx context.Context, _ string, _ []byte) (partition.Reply, error) {
	st, err := n.localStatus(ctx)
	if err != nil {
		return partition.ReplyOf(nil, err), nil
	}
	b, err := json.Marshal(st)
	return partition.Reply{Result: b}, err
}

// ClusterStatus implements api.StatusSource: the map, with every replica's
// progress gathered from its node (nodes that do not answer in time show
// as unreachable).
func (n *Node) ClusterStatus(ctx context.Context) (*api.ClusterStatus, error) {
	m := n.Map()
	if m == nil {
		return &api.ClusterStatus{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var mu sync.Mutex
	byNode := map[string]map[uint64]multiraft.GroupStatus{}
	var wg sync.WaitGroup
	for _, nd := range m.Nodes {
		wg.Add(1)
		go func(nd placement.Node) {
			defer wg.Done()
			sts, err := n.nodeStatus(ctx, nd)
			if err != nil {
				return
			}
			idx := map[uint64]multiraft.GroupStatus{}
			for _, s := range sts {
				idx[s.Group] = s
			}
			mu.Lock()
			byNode[nd.ID] = idx
			mu.Unlock()
		}(nd)
	}
	wg.Wait()
	return buildStatus(m, byNode, n.MemberState, n.memberBuild), nil
}

func (n *Node) nodeStatus(ctx context.Context, nd placement.Node) ([]multiraft.GroupStatus, error) {
	if nd.ID == n.cfg.ID {
		return n.localStatus(ctx)
	}
	var rep partition.Reply
	if err := n.call(ctx, nd.Addr, methodStatus, nil, &rep); err != nil {
		return nil, err
	}
	if err := rep.Err(0); err != nil {
		return nil, err
	}
	var sts []multiraft.GroupStatus
	return sts, json.Unmarshal(rep.Result, &sts)
}

// ClusterProtocol returns the internal protocol every node of the cluster
// speaks, as this node knows it: compat.ClusterProtocol over the newest
// protocol of every node in the cluster map, as gossip tells it (a node
// gossip does not know, or that does not say, counts as protocol 1). It is
// what buildStatus reports, without asking the nodes for their replicas.
// Before the node has a map it is this build's protocol.
func (n *Node) ClusterProtocol() int {
	m := n.Map()
	if m == nil {
		return compat.Protocol
	}
	protocols := make([]int, 0, len(m.Nodes))
	for _, nd := range m.Nodes {
		_, p := n.memberBuild(nd.ID)
		protocols = append(protocols, p)
	}
	return compat.ClusterProtocol(protocols)
}

// buildStatus joins the map with the replicas' reported progress.
// gossip gives each node's state as this node's gossip sees it, and build
// the binary it runs and the newest protocol it speaks.
func buildStatus(m *placement.Map, byNode map[string]map[uint64]multiraft.GroupStatus,
	gossip func(string) string, build func(string) (string, int)) *api.ClusterStatus {
	cs := &api.ClusterStatus{ClusterID: m.ClusterID, Moves: []api.Move{}}
	replicas, leaders := map[string]int{}, map[string]int{}
	target := replicaTarget(m)
	for _, g := range m.Groups {
		ps := api.PartitionStatus{ID: g.ID, Replicas: []api.ReplicaStatus{}}
		var leaderApplied uint64
		var leaderSt multiraft.GroupStatus
		for _, r := range g.Replicas {
			if st, ok := byNode[r.Node][g.ID]; ok && st.IsLeader {
				ps.Leader, leaderApplied, leaderSt = r.Node, st.Applied, st
			}
		}
		ps.UnderReplicated = underReplicated(leaderSt, target, func(replica uint64) bool {
			node, ok := m.ReplicaNode(replica)
			_, answered := byNode[node]
			return ok && answered
		})
		for _, r := range g.Replicas {
			rs := api.ReplicaStatus{Node: r.Node, Role: "unreachable"}
			if st, ok := byNode[r.Node][g.ID]; ok {
				rs.Applied = st.Applied
				lagMs, lagEntries := replicaLag(st, leaderApplied, time.Now())
				rs.LagMs, rs.LagEntries = &lagMs, &lagEntries
				switch {
				case st.IsLeader:
					rs.Role = "leader"
				case isLearnerIn(st, r.ID):
					rs.Role = "learner"
					// The metadata group keeps every node past its voters
					// as a learner for good: only one the map wants a
					// voter is on its way somewhere.
					if g.ID != placement.MetaGroup || r.Role != placement.RoleLearner {
						cs.Moves = append(cs.Moves, api.Move{Partition: g.ID, To: r.Node, Phase: "learner"})
					}
				default:
					rs.Role = "follower"
				}
			}
			if g.ID != placement.MetaGroup {
				replicas[r.Node]++
				if rs.Role == "leader" {
					leaders[r.Node]++
				}
			}
			ps.Replicas = append(ps.Replicas, rs)
		}
		if g.ID != placement.MetaGroup {
			cs.Partitions = append(cs.Partitions, ps)
		}
	}
	var protocols []int
	for _, nd := range m.Nodes {
		state := "alive"
		if _, ok := byNode[nd.ID]; !ok {
			state = "unreachable"
		}
		state = nodeStatusState(state, gossip(nd.ID), nd.State)
		cs.Moves = append(cs.Moves, drainMoves(m, nd)...)
		b, p := build(nd.ID)
		protocols = append(protocols, p)
		cs.Nodes = append(cs.Nodes, api.NodeStatus{
			ID: nd.ID, Addr: nd.HTTPAddr, Zone: nd.Zone, State: state, Standby: nd.Standby,
			Replicas: replicas[nd.ID], Leaders: leaders[nd.ID], Build: b, Protocol: max(p, 1),
		})
	}
	cs.Protocol = compat.ClusterProtocol(protocols)
	return cs
}

func isLearnerIn(st multiraft.GroupStatus, id uint64) bool {
	for _, l := range st.ConfState.Learners {
		if l == id {
			return true
		}
	}
	return false
}

// replicaLag is what the cluster status reports of a replica whose state is
// st, while its leader applied up to leaderApplied: the latest lag sample
// (how long after the leader stamped the last command this replica applied
// it) and no entries behind; when behind, the entries it lacks and at least
// how long since it last had everything; 0 and 0 for the leader (its
// samples are from when it followed), and a 0 ms lag for a replica that has
// everything and took its sample longer than lagWindow ago (an old sample,
// from a catch-up say, is no lag any more).
func replicaLag(st multiraft.GroupStatus, leaderApplied uint64, now time.Time) (ms int64, entries uint64) {
	switch {
	case st.IsLeader:
		return 0, 0
	case leaderApplied > st.Applied:
		return max(st.LagMs, st.StaleMs, 0), leaderApplied - st.Applied
	case now.Sub(time.UnixMilli(st.LagAt)) > lagWindow:
		return 0, 0
	}
	return max(st.LagMs, 0), 0
}

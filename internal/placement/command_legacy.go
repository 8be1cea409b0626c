package placement

import (
	"encoding/json"
	"fmt"
)

// legacyCommand is the JSON form every metadata command had before the
// binary codec: Tag then this object. Raft logs of older data directories
// hold it, so the state machine still applies it, exactly as the code of
// that time did (DESIGN.md). Nothing encodes it any more.
type legacyCommand struct {
	Op                string     `json:"op"`
	ClusterID         string     `json:"cluster_id,omitempty"`
	Partitions        int        `json:"partitions,omitempty"`
	ReplicationFactor int        `json:"replication_factor,omitempty"`
	MetaVoters        int        `json:"meta_voters,omitempty"`
	Node              *Node      `json:"node,omitempty"`
	CA                *CASecret  `json:"ca,omitempty"`
	GossipKey         []byte     `json:"gossip_key,omitempty"`
	Token             *JoinToken `json:"token,omitempty"`
	TokenID           string     `json:"token_id,omitempty"`
	NodeCert          []byte     `json:"node_cert,omitempty"`
	Group             uint64     `json:"group,omitempty"`
	Replica           uint64     `json:"replica,omitempty"`
	NodeID            string     `json:"node_id,omitempty"`
	Role              string     `json:"role,omitempty"`
	State             string     `json:"state,omitempty"`
	Dead              bool       `json:"dead,omitempty"`
	Term              uint64     `json:"term,omitempty"`
}

// decodeLegacy decodes the legacy JSON form (b is what followed Tag) into
// the typed command that applies alike, and the term it was fenced by: the
// old state machine fenced any command carrying one (the controller only
// ever set it on the fenced kinds, but the log may hold anything a member
// proposed).
//
// The old state machine refused a create or an update_node without a node
// whatever else the command held; a typed command always has a node, so
// those are refused here. Every other difference from the typed commands
// is only in the text of a refusal, never in the state.
func decodeLegacy(b []byte) (Command, uint64, error) {
	var c legacyCommand
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, 0, fmt.Errorf("%w: legacy JSON: %v", errMalformed, err)
	}
	node := func() Node {
		if c.Node == nil {
			return Node{}
		}
		return *c.Node
	}
	var cmd Command
	switch c.Op {
	case "create":
		if c.Node == nil {
			return nil, 0, fmt.Errorf("%w: legacy create without a node", errMalformed)
		}
		cmd = CreateCluster{ClusterID: c.ClusterID, Partitions: c.Partitions, ReplicationFactor: c.ReplicationFactor,
			MetaVoters: c.MetaVoters, Node: *c.Node, CA: c.CA, GossipKey: c.GossipKey, Token: c.Token}
	case "add_node":
		cmd = AddNode{Node: node(), Cert: c.NodeCert} // no node: refused for its empty id
	case "add_replica":
		cmd = AddReplica{Term: c.Term, Group: c.Group, NodeID: c.NodeID, Role: c.Role}
	case "set_role":
		cmd = SetRole{Term: c.Term, Group: c.Group, Replica: c.Replica, Role: c.Role}
	case "remove_replica":
		cmd = RemoveReplica{Term: c.Term, Group: c.Group, Replica: c.Replica}
	case "fence":
		cmd = Fence{Term: c.Term}
	case "set_node_state":
		cmd = SetNodeState{NodeID: c.NodeID, State: c.State}
	case "remove_node":
		cmd = RemoveNode{NodeID: c.NodeID, Dead: c.Dead}
	case "update_node":
		if c.Node == nil {
			return nil, 0, fmt.Errorf("%w: legacy update_node without a node", errMalformed)
		}
		cmd = UpdateNode{Node: *c.Node}
	case "add_token":
		var t JoinToken
		if c.Token != nil {
			t = *c.Token
		}
		cmd = AddToken{Token: t} // no token: refused for its empty id
	case "revoke_token":
		cmd = RevokeToken{ID: c.TokenID}
	case "rotate_gossip_key":
		cmd = RotateGossipKey{Key: c.GossipKey}
	default:
		return nil, 0, fmt.Errorf("%w: unknown legacy op %q", errMalformed, c.Op)
	}
	return cmd, c.Term, nil
}

package placement

// The metadata state machine as it was before the binary codec (commit
// 5aba261, meta.go and secrets.go), kept verbatim but for names: the oracle
// the legacy decoder is checked against. A log entry of an old data
// directory must change the state exactly as this code did. Never edit it
// to follow the state machine.

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/parley-chat/parley/internal/state"
)

// oracleCommand changes the cluster map. Fields beyond Op depend on the op.
type oracleCommand struct {
	Op string `json:"op"`
	// Create: the new cluster's identity and the first node.
	ClusterID         string `json:"cluster_id,omitempty"`
	Partitions        int    `json:"partitions,omitempty"`
	ReplicationFactor int    `json:"replication_factor,omitempty"`
	MetaVoters        int    `json:"meta_voters,omitempty"`
	// Create and AddNode: the node.
	Node *Node `json:"node,omitempty"`
	// Create: the cluster CA (none in an insecure cluster or one on the
	// operator's PKI). Create, RotateGossipKey: a gossip key.
	CA        *CASecret `json:"ca,omitempty"`
	GossipKey []byte    `json:"gossip_key,omitempty"`
	// Create, AddToken: a join token; RevokeToken: its id.
	Token   *JoinToken `json:"token,omitempty"`
	TokenID string     `json:"token_id,omitempty"`
	// AddNode: the certificate (DER) the node joins with; Node.CertFP is
	// its fingerprint. Kept so that a retried join gets it again.
	NodeCert []byte `json:"node_cert,omitempty"`
	// AddReplica, SetRole, RemoveReplica.
	Group   uint64 `json:"group,omitempty"`
	Replica uint64 `json:"replica,omitempty"`
	NodeID  string `json:"node_id,omitempty"`
	Role    string `json:"role,omitempty"`
	// SetNodeState: the node's new state (NodeID names it).
	State string `json:"state,omitempty"`
	// RemoveNode: the proposer's gossip saw the node dead, so it may go
	// with its replicas.
	Dead bool `json:"dead,omitempty"`
	// Term is the metadata leader's Raft term when the placement controller
	// decided the command (AddReplica, SetRole, RemoveReplica, Fence); a
	// command whose term is below the map's was decided by a deposed leader
	// and is refused. Zero means unfenced (joins, operator commands).
	Term uint64 `json:"term,omitempty"`
}

// Commands of the metadata group.
const (
	oracleOpCreate        = "create"
	oracleOpAddNode       = "add_node"
	oracleOpAddReplica    = "add_replica"
	oracleOpSetRole       = "set_role"
	oracleOpRemoveReplica = "remove_replica"
	// oracleOpFence raises the map's term to the proposer's: a new metadata
	// leader proposes it before deciding anything, so every command of a
	// deposed leader that was still in the log is applied first, and any
	// later one is refused.
	oracleOpFence = "fence"
	// oracleOpSetNodeState marks a node draining (or active again).
	oracleOpSetNodeState = "set_node_state"
	// oracleOpRemoveNode forgets a node and every replica it holds: only a
	// drained node, or one the proposer saw dead (Dead).
	oracleOpRemoveNode = "remove_node"
	// oracleOpUpdateNode refreshes the addresses of a member of the same
	// incarnation (a gossip port picked at start); it never adds one.
	oracleOpUpdateNode = "update_node"
	// oracleOpAddToken records a join token (its hash); oracleOpRevokeToken forgets
	// one. oracleOpRotateGossipKey puts a new gossip key in use.
	oracleOpAddToken        = "add_token"
	oracleOpRevokeToken     = "revoke_token"
	oracleOpRotateGossipKey = "rotate_gossip_key"
)

// oracleResult is what applying an oracleCommand returned.
type oracleResult struct {
	Replica uint64 `json:"replica,omitempty"`
	Error   string `json:"error,omitempty"`
	Map     *Map   `json:"map,omitempty"`
}

// Apply applies one command deterministically.
func oracleApply(w state.Writer, cmd []byte) ([]byte, error) {
	var c oracleCommand
	if len(cmd) == 0 || cmd[0] != Tag || json.Unmarshal(cmd[1:], &c) != nil {
		return json.Marshal(oracleResult{Error: "malformed metadata command"})
	}
	if c.Op != oracleOpCreate {
		if res, handled, err := oracleApplySecrets(w, &c); handled || err != nil {
			if err != nil {
				return nil, err
			}
			return json.Marshal(res)
		}
	}
	m, exists, err := LoadMap(w)
	if err != nil {
		return nil, err
	}
	if !exists && c.Op != oracleOpCreate {
		return json.Marshal(oracleResult{Error: "cluster not created yet"})
	}
	if !exists {
		m = &Map{}
	}
	res := oracleApplyMap(m, &c)
	if res.Error == "" {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		if err := w.Set(keyMap, b); err != nil {
			return nil, err
		}
		switch {
		case c.Op == oracleOpCreate:
			if _, _, err := oracleApplySecrets(w, &c); err != nil {
				return nil, err
			}
		case c.Op == oracleOpAddNode && len(c.NodeCert) > 0:
			if err := w.Set(nodeCertKey(c.Node.ID), c.NodeCert); err != nil {
				return nil, err
			}
		}
	}
	return json.Marshal(res)
}

// oracleErrNodeIDTaken is the Result.Error of a join that claims the id of a
// member it cannot prove to be.
const oracleErrNodeIDTaken = "node id taken: a member of the cluster has it (a node that lost its data directory must be removed first: parley cluster remove ID)"

// oracleErrStaleTerm is the Result.Error of a command fenced off by a newer
// metadata leader.
const oracleErrStaleTerm = "stale term: decided by a deposed metadata leader"

func oracleApplyMap(m *Map, c *oracleCommand) oracleResult {
	if c.Term != 0 {
		if c.Term < m.Term {
			return oracleResult{Error: oracleErrStaleTerm}
		}
		m.Term = c.Term
	}
	switch c.Op {
	case oracleOpFence:
		return oracleResult{}
	case oracleOpSetNodeState:
		return oracleApplySetNodeState(m, c)
	case oracleOpRemoveNode:
		return oracleApplyRemoveNode(m, c)
	case oracleOpUpdateNode:
		return oracleApplyUpdateNode(m, c)
	case oracleOpCreate:
		return oracleApplyCreate(m, c)
	case oracleOpAddNode:
		return oracleApplyAddNode(m, c)
	case oracleOpAddReplica:
		return oracleApplyAddReplica(m, c)
	case oracleOpSetRole:
		for i, r := range m.groupReplicas(c.Group) {
			if r.ID == c.Replica {
				m.Groups[c.Group].Replicas[i].Role = c.Role
				return oracleResult{Replica: r.ID}
			}
		}
		return oracleResult{Error: "no such replica"}
	case oracleOpRemoveReplica:
		rs := m.groupReplicas(c.Group)
		i := slices.IndexFunc(rs, func(r Replica) bool { return r.ID == c.Replica })
		if i < 0 {
			return oracleResult{Error: "no such replica"}
		}
		m.Groups[c.Group].Replicas = slices.Delete(rs, i, i+1)
		return oracleResult{Replica: c.Replica}
	}
	return oracleResult{Error: "unknown metadata command " + c.Op}
}

func oracleApplyCreate(m *Map, c *oracleCommand) oracleResult {
	if m.ClusterID != "" {
		return oracleResult{Error: "cluster already created"}
	}
	if c.Node == nil || c.Partitions < 1 || c.ReplicationFactor < 1 || c.ClusterID == "" {
		return oracleResult{Error: "create needs a cluster id, a node, partitions and a replication factor"}
	}
	if c.Partitions > MaxPartitions {
		return oracleResult{Error: fmt.Sprintf("create: %d partitions, at most %d", c.Partitions, MaxPartitions)}
	}
	*m = Map{
		ClusterID:         c.ClusterID,
		Hash:              HashFNV1a64,
		Partitions:        c.Partitions,
		ReplicationFactor: c.ReplicationFactor,
		MetaVoters:        max(1, c.MetaVoters),
	}
	n := *c.Node
	n.State = NodeActive
	m.Nodes = []Node{n}
	for i, id := range BootstrapReplicas(c.Partitions) {
		m.Groups = append(m.Groups, Group{ID: uint64(i), Replicas: []Replica{{ID: id, Node: n.ID, Role: RoleVoter}}})
		m.NextReplicaID = id + 1
	}
	return oracleResult{Replica: 1}
}

func oracleApplyAddNode(m *Map, c *oracleCommand) oracleResult {
	if c.Node == nil || c.Node.ID == "" || c.Node.Addr == "" {
		return oracleResult{Error: "add_node needs a node id and address"}
	}
	n := *c.Node
	n.State = NodeActive
	if slices.ContainsFunc(m.Revoked, func(r Revocation) bool { return r.Fingerprint == n.CertFP && n.CertFP != "" }) {
		return oracleResult{Error: "the certificate of node " + n.ID + " is revoked"}
	}
	if old, ok := m.Node(n.ID); ok {
		// An id belongs to the certificate it joined with: the same join
		// again (a retry) changes nothing; anyone else claiming it — even
		// the same machine back with an empty data directory — is refused
		// until the old member is removed.
		if old.Incarnation == n.Incarnation && old.CertFP == n.CertFP {
			r, _ := m.ReplicaOn(MetaGroup, n.ID)
			return oracleResult{Replica: r.ID, Map: m.Clone()}
		}
		return oracleResult{Error: oracleErrNodeIDTaken}
	} else {
		i, _ := slices.BinarySearchFunc(m.Nodes, n.ID, func(a Node, id string) int {
			if a.ID < id {
				return -1
			}
			if a.ID > id {
				return 1
			}
			return 0
		})
		m.Nodes = slices.Insert(m.Nodes, i, n)
	}
	role := RoleLearner
	if m.voters(MetaGroup) < m.MetaVoters {
		role = RoleVoter
	}
	id := m.addReplica(MetaGroup, n.ID, role)
	return oracleResult{Replica: id, Map: m.Clone()}
}

func oracleApplyAddReplica(m *Map, c *oracleCommand) oracleResult {
	if c.Group >= uint64(len(m.Groups)) {
		return oracleResult{Error: "no such group"}
	}
	if _, ok := m.Node(c.NodeID); !ok {
		return oracleResult{Error: "no such node"}
	}
	if r, ok := m.ReplicaOn(c.Group, c.NodeID); ok {
		return oracleResult{Replica: r.ID}
	}
	role := c.Role
	if role == "" {
		role = RoleVoter
	}
	return oracleResult{Replica: m.addReplica(c.Group, c.NodeID, role)}
}

func oracleApplySetNodeState(m *Map, c *oracleCommand) oracleResult {
	n, ok := m.Node(c.NodeID)
	if !ok {
		return oracleResult{Error: "no such node"}
	}
	if c.State != NodeActive && c.State != NodeDraining {
		return oracleResult{Error: "unknown node state " + c.State}
	}
	n.State = c.State
	return oracleResult{}
}

func oracleApplyUpdateNode(m *Map, c *oracleCommand) oracleResult {
	if c.Node == nil {
		return oracleResult{Error: "update_node needs a node"}
	}
	old, ok := m.Node(c.Node.ID)
	if !ok || old.Incarnation != c.Node.Incarnation {
		return oracleResult{Error: "no such node"}
	}
	if c.Node.Addr != "" {
		old.Addr = c.Node.Addr
	}
	if c.Node.HTTPAddr != "" {
		old.HTTPAddr = c.Node.HTTPAddr
	}
	if c.Node.GossipAddr != "" {
		old.GossipAddr = c.Node.GossipAddr
	}
	return oracleResult{}
}

// oracleApplyRemoveNode forgets a node: one that is drained (draining and holding
// no voter of any group, nor any partition replica) or that the proposer
// saw dead. Its remaining replicas leave the map with it; each group's
// leader then removes them from Raft.
func oracleApplyRemoveNode(m *Map, c *oracleCommand) oracleResult {
	n, ok := m.Node(c.NodeID)
	if !ok {
		return oracleResult{Error: "no such node"}
	}
	if !c.Dead {
		if n.State != NodeDraining {
			return oracleResult{Error: "node " + c.NodeID + " is neither drained nor dead: drain it first"}
		}
		// The refusal's words are this version's (replicas compare results
		// only within one version): what is held, named apart.
		if held := m.HeldBy(c.NodeID); held.Total() > 0 {
			return oracleResult{Error: fmt.Sprintf("node %s is still draining: it holds %s", c.NodeID, held)}
		}
	}
	for gi := range m.Groups {
		m.Groups[gi].Replicas = slices.DeleteFunc(m.Groups[gi].Replicas, func(r Replica) bool { return r.Node == c.NodeID })
	}
	if n.CertFP != "" {
		m.Revoked = append(m.Revoked, Revocation{Node: n.ID, Fingerprint: n.CertFP})
	}
	m.Nodes = slices.DeleteFunc(m.Nodes, func(x Node) bool { return x.ID == c.NodeID })
	return oracleResult{}
}

// oracleApplySecrets applies the commands that change secrets, not the map
// (handled reports false for any other), and writes the secrets a create
// brings once the map was created.
func oracleApplySecrets(w state.Writer, c *oracleCommand) (res oracleResult, handled bool, err error) {
	switch c.Op {
	case oracleOpCreate:
		// Called after the map was created: store what came with it.
		if c.CA != nil {
			if err := setJSON(w, keyCA, c.CA); err != nil {
				return res, true, err
			}
		}
		if len(c.GossipKey) > 0 {
			if err := setJSON(w, keyGossip, [][]byte{c.GossipKey}); err != nil {
				return res, true, err
			}
		}
		if c.Token != nil {
			err = setJSON(w, append(slices.Clone(tokenPrefix), c.Token.ID...), c.Token)
		}
		return res, true, err
	case oracleOpAddToken:
		if c.Token == nil || c.Token.ID == "" || c.Token.Hash == "" {
			return oracleResult{Error: "add_token needs a token id and hash"}, true, nil
		}
		if _, ok, err := LoadToken(w, c.Token.ID); err != nil || ok {
			return oracleResult{Error: "a join token with this id exists"}, true, err
		}
		return res, true, setJSON(w, append(slices.Clone(tokenPrefix), c.Token.ID...), c.Token)
	case oracleOpRevokeToken:
		k := append(slices.Clone(tokenPrefix), c.TokenID...)
		if _, ok, err := w.Get(k); err != nil || !ok {
			return oracleResult{Error: "no such join token"}, true, err
		}
		return res, true, w.Delete(k)
	case oracleOpRotateGossipKey:
		if len(c.GossipKey) == 0 {
			return oracleResult{Error: "rotate_gossip_key needs a key"}, true, nil
		}
		keys, err := LoadGossipKeys(w)
		if err != nil {
			return res, true, err
		}
		if len(keys) == 0 {
			return oracleResult{Error: "this cluster has no gossip key to rotate (insecure)"}, true, nil
		}
		keys = append([][]byte{c.GossipKey}, keys...)
		return res, true, setJSON(w, keyGossip, keys[:min(len(keys), maxGossipKeys)])
	}
	return res, false, nil
}

// oracleEncode is the old Command.Encode.
func oracleEncode(c *oracleCommand) []byte {
	b, _ := json.Marshal(c) // cannot fail: plain fields
	return append([]byte{Tag}, b...)
}

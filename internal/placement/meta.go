package placement

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/parley-chat/parley/internal/state"
)

// Tag is the first byte of every metadata command.
const Tag byte = 'M'

var keyMap = []byte("map")

// Commands of the metadata group.
const (
	OpCreate        = "create"
	OpAddNode       = "add_node"
	OpAddReplica    = "add_replica"
	OpSetRole       = "set_role"
	OpRemoveReplica = "remove_replica"
	// OpFence raises the map's term to the proposer's: a new metadata
	// leader proposes it before deciding anything, so every command of a
	// deposed leader that was still in the log is applied first, and any
	// later one is refused.
	OpFence = "fence"
	// OpSetNodeState marks a node draining (or active again).
	OpSetNodeState = "set_node_state"
	// OpRemoveNode forgets a node and every replica it holds: only a
	// drained node, or one the proposer saw dead (Dead).
	OpRemoveNode = "remove_node"
	// OpUpdateNode refreshes the addresses of a member of the same
	// incarnation (a gossip port picked at start); it never adds one.
	OpUpdateNode = "update_node"
	// OpAddToken records a join token (its hash); OpRevokeToken forgets
	// one. OpRotateGossipKey puts a new gossip key in use.
	OpAddToken        = "add_token"
	OpRevokeToken     = "revoke_token"
	OpRotateGossipKey = "rotate_gossip_key"
)

// Command changes the cluster map. Fields beyond Op depend on the op.
type Command struct {
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

// Result is what applying a Command returns.
type Result struct {
	// Replica is the replica id created or found (AddNode: the node's
	// metadata replica).
	Replica uint64 `json:"replica,omitempty"`
	// Error is set when the command was refused; the map is unchanged.
	Error string `json:"error,omitempty"`
	// Map is the map after the command (AddNode only, for the joining node).
	Map *Map `json:"map,omitempty"`
}

// Encode returns the command's wire form.
func (c *Command) Encode() []byte {
	b, _ := json.Marshal(c) // cannot fail: plain fields
	return append([]byte{Tag}, b...)
}

// DecodeResult parses an Apply result.
func DecodeResult(b []byte) (Result, error) {
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("placement: bad result: %w", err)
	}
	return r, nil
}

// BootstrapReplicas returns the replica ids a new cluster's first node gets:
// the metadata group's first, then partition p's at index p.
func BootstrapReplicas(partitions int) []uint64 {
	ids := make([]uint64, partitions+1)
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	return ids
}

// LoadMap reads the cluster map from the metadata group's state; ok is false
// before the cluster was created.
func LoadMap(r state.Reader) (*Map, bool, error) {
	b, ok, err := r.Get(keyMap)
	if err != nil || !ok {
		return nil, false, err
	}
	var m Map
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, false, fmt.Errorf("placement: corrupt cluster map: %w", err)
	}
	return &m, true, nil
}

// StateMachine applies metadata commands; it implements state.Applier.
type StateMachine struct{}

var _ state.Applier = StateMachine{}

// Apply applies one command deterministically.
func (StateMachine) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	var c Command
	if len(cmd) == 0 || cmd[0] != Tag || json.Unmarshal(cmd[1:], &c) != nil {
		return json.Marshal(Result{Error: "malformed metadata command"})
	}
	if c.Op != OpCreate {
		if res, handled, err := applySecrets(w, &c); handled || err != nil {
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
	if !exists && c.Op != OpCreate {
		return json.Marshal(Result{Error: "cluster not created yet"})
	}
	if !exists {
		m = &Map{}
	}
	res := apply(m, &c)
	if res.Error == "" {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		if err := w.Set(keyMap, b); err != nil {
			return nil, err
		}
		switch {
		case c.Op == OpCreate:
			if _, _, err := applySecrets(w, &c); err != nil {
				return nil, err
			}
		case c.Op == OpAddNode && len(c.NodeCert) > 0:
			if err := w.Set(nodeCertKey(c.Node.ID), c.NodeCert); err != nil {
				return nil, err
			}
		}
	}
	return json.Marshal(res)
}

// ErrNodeIDTaken is the Result.Error of a join that claims the id of a
// member it cannot prove to be.
const ErrNodeIDTaken = "node id taken: a member of the cluster has it (a node that lost its data directory must be removed first: parley cluster remove ID)"

// ErrStaleTerm is the Result.Error of a command fenced off by a newer
// metadata leader.
const ErrStaleTerm = "stale term: decided by a deposed metadata leader"

func apply(m *Map, c *Command) Result {
	if c.Term != 0 {
		if c.Term < m.Term {
			return Result{Error: ErrStaleTerm}
		}
		m.Term = c.Term
	}
	switch c.Op {
	case OpFence:
		return Result{}
	case OpSetNodeState:
		return applySetNodeState(m, c)
	case OpRemoveNode:
		return applyRemoveNode(m, c)
	case OpUpdateNode:
		return applyUpdateNode(m, c)
	case OpCreate:
		return applyCreate(m, c)
	case OpAddNode:
		return applyAddNode(m, c)
	case OpAddReplica:
		return applyAddReplica(m, c)
	case OpSetRole:
		for i, r := range m.groupReplicas(c.Group) {
			if r.ID == c.Replica {
				m.Groups[c.Group].Replicas[i].Role = c.Role
				return Result{Replica: r.ID}
			}
		}
		return Result{Error: "no such replica"}
	case OpRemoveReplica:
		rs := m.groupReplicas(c.Group)
		i := slices.IndexFunc(rs, func(r Replica) bool { return r.ID == c.Replica })
		if i < 0 {
			return Result{Error: "no such replica"}
		}
		m.Groups[c.Group].Replicas = slices.Delete(rs, i, i+1)
		return Result{Replica: c.Replica}
	}
	return Result{Error: "unknown metadata command " + c.Op}
}

func (m *Map) groupReplicas(g uint64) []Replica {
	if g >= uint64(len(m.Groups)) {
		return nil
	}
	return m.Groups[g].Replicas
}

// MaxPartitions is the most partitions a cluster may have (the
// configuration's limit, config.Validate).
const MaxPartitions = 4096

func applyCreate(m *Map, c *Command) Result {
	if m.ClusterID != "" {
		return Result{Error: "cluster already created"}
	}
	if c.Node == nil || c.Partitions < 1 || c.ReplicationFactor < 1 || c.ClusterID == "" {
		return Result{Error: "create needs a cluster id, a node, partitions and a replication factor"}
	}
	if c.Partitions > MaxPartitions {
		return Result{Error: fmt.Sprintf("create: %d partitions, at most %d", c.Partitions, MaxPartitions)}
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
	return Result{Replica: 1}
}

func applyAddNode(m *Map, c *Command) Result {
	if c.Node == nil || c.Node.ID == "" || c.Node.Addr == "" {
		return Result{Error: "add_node needs a node id and address"}
	}
	n := *c.Node
	n.State = NodeActive
	if slices.ContainsFunc(m.Revoked, func(r Revocation) bool { return r.Fingerprint == n.CertFP && n.CertFP != "" }) {
		return Result{Error: "the certificate of node " + n.ID + " is revoked"}
	}
	if old, ok := m.Node(n.ID); ok {
		// An id belongs to the certificate it joined with: the same join
		// again (a retry) changes nothing; anyone else claiming it — even
		// the same machine back with an empty data directory — is refused
		// until the old member is removed.
		if old.Incarnation == n.Incarnation && old.CertFP == n.CertFP {
			r, _ := m.ReplicaOn(MetaGroup, n.ID)
			return Result{Replica: r.ID, Map: m.Clone()}
		}
		return Result{Error: ErrNodeIDTaken}
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
	return Result{Replica: id, Map: m.Clone()}
}

func applyAddReplica(m *Map, c *Command) Result {
	if c.Group >= uint64(len(m.Groups)) {
		return Result{Error: "no such group"}
	}
	if _, ok := m.Node(c.NodeID); !ok {
		return Result{Error: "no such node"}
	}
	if r, ok := m.ReplicaOn(c.Group, c.NodeID); ok {
		return Result{Replica: r.ID}
	}
	role := c.Role
	if role == "" {
		role = RoleVoter
	}
	return Result{Replica: m.addReplica(c.Group, c.NodeID, role)}
}

func (m *Map) addReplica(g uint64, node, role string) uint64 {
	id := m.NextReplicaID
	m.NextReplicaID++
	m.Groups[g].Replicas = append(m.Groups[g].Replicas, Replica{ID: id, Node: node, Role: role})
	return id
}

func (m *Map) voters(g uint64) int {
	n := 0
	for _, r := range m.groupReplicas(g) {
		if r.Role == RoleVoter {
			n++
		}
	}
	return n
}

func applySetNodeState(m *Map, c *Command) Result {
	n, ok := m.Node(c.NodeID)
	if !ok {
		return Result{Error: "no such node"}
	}
	if c.State != NodeActive && c.State != NodeDraining {
		return Result{Error: "unknown node state " + c.State}
	}
	n.State = c.State
	return Result{}
}

func applyUpdateNode(m *Map, c *Command) Result {
	if c.Node == nil {
		return Result{Error: "update_node needs a node"}
	}
	old, ok := m.Node(c.Node.ID)
	if !ok || old.Incarnation != c.Node.Incarnation {
		return Result{Error: "no such node"}
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
	return Result{}
}

// applyRemoveNode forgets a node: one that is drained (draining and holding
// no voter of any group, nor any partition replica) or that the proposer
// saw dead. Its remaining replicas leave the map with it; each group's
// leader then removes them from Raft.
func applyRemoveNode(m *Map, c *Command) Result {
	n, ok := m.Node(c.NodeID)
	if !ok {
		return Result{Error: "no such node"}
	}
	if !c.Dead {
		if n.State != NodeDraining {
			return Result{Error: "node " + c.NodeID + " is neither drained nor dead: drain it first"}
		}
		if held := m.HeldBy(c.NodeID); held.Total() > 0 {
			return Result{Error: fmt.Sprintf("node %s is still draining: it holds %s", c.NodeID, held)}
		}
	}
	for gi := range m.Groups {
		m.Groups[gi].Replicas = slices.DeleteFunc(m.Groups[gi].Replicas, func(r Replica) bool { return r.Node == c.NodeID })
	}
	if n.CertFP != "" {
		m.Revoked = append(m.Revoked, Revocation{Node: n.ID, Fingerprint: n.CertFP})
	}
	m.Nodes = slices.DeleteFunc(m.Nodes, func(x Node) bool { return x.ID == c.NodeID })
	return Result{}
}

// Holding returns how many replicas a node still has to hand over before it
// is drained: HeldBy(node).Total().
func (m *Map) Holding(node string) int { return m.HeldBy(node).Total() }

// HeldBy returns what a node still has to hand over before it is drained:
// its partition replicas and its metadata voter (a metadata learner only
// follows the map).
func (m *Map) HeldBy(node string) Held {
	var h Held
	for _, g := range m.Groups {
		for _, r := range g.Replicas {
			switch {
			case r.Node != node:
			case g.ID != MetaGroup:
				h.Partitions++
			case r.Role == RoleVoter:
				h.MetaVoter = true
			}
		}
	}
	return h
}

// Held is what a node holds that a drain must move: partition replicas,
// and a voter of the metadata group, which is no partition. Messages name
// the two apart, so that a count never disagrees with the number of
// partitions the cluster reports.
type Held struct {
	Partitions int  // partition replicas
	MetaVoter  bool // a voter of the metadata group
}

// Total is the number of replicas held, the metadata voter included.
func (h Held) Total() int {
	if h.MetaVoter {
		return h.Partitions + 1
	}
	return h.Partitions
}

// String describes h for messages: "16 partition replicas and a metadata
// voter", "1 partition replica", "a metadata voter", "no replica".
func (h Held) String() string {
	var parts string
	switch h.Partitions {
	case 0:
	case 1:
		parts = "1 partition replica"
	default:
		parts = fmt.Sprintf("%d partition replicas", h.Partitions)
	}
	switch {
	case parts != "" && h.MetaVoter:
		return parts + " and a metadata voter"
	case h.MetaVoter:
		return "a metadata voter"
	case parts != "":
		return parts
	}
	return "no replica"
}

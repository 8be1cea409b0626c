package placement

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/parley-chat/parley/internal/state"
)

var keyMap = []byte("map")

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

// Apply applies one command deterministically: a refused command leaves
// the state as it was and says why in its Result. The result of a legacy
// JSON command keeps the legacy form (no code), so that a log entry applied
// by the version before the codec on one replica and by this one on another
// records the same result (DESIGN.md).
func (StateMachine) Apply(w state.Writer, _ state.Meta, cmd []byte) ([]byte, error) {
	c, term, err := decode(cmd)
	var res Result
	if err != nil {
		res = refused(CodeMalformed, "%v", err)
	} else if res, err = applyCommand(w, c, term); err != nil {
		return nil, err
	}
	if legacyForm(cmd) {
		res.Code = CodeOK
	}
	return json.Marshal(res)
}

func applyCommand(w state.Writer, c Command, term uint64) (Result, error) {
	if res, handled, err := applySecrets(w, c); handled || err != nil {
		return res, err
	}
	m, exists, err := LoadMap(w)
	if err != nil {
		return Result{}, err
	}
	if _, create := c.(CreateCluster); !exists && !create {
		return refused(CodeNotCreated, "cluster not created yet"), nil
	}
	if !exists {
		m = &Map{}
	}
	res := applyMap(m, c, term)
	if res.Code != CodeOK {
		return res, nil
	}
	if err := setJSON(w, keyMap, m); err != nil {
		return Result{}, err
	}
	switch c := c.(type) {
	case CreateCluster:
		err = storeCreateSecrets(w, c)
	case AddNode:
		if len(c.Cert) > 0 {
			err = w.Set(nodeCertKey(c.Node.ID), c.Cert)
		}
	}
	return res, err
}

// applyMap applies a command that changes the map: first the fence (term,
// see Command), then the command.
func applyMap(m *Map, c Command, term uint64) Result {
	if term != 0 {
		if term < m.Term {
			return refused(CodeStaleTerm, ReasonStaleTerm)
		}
		m.Term = term
	}
	switch c := c.(type) {
	case Fence:
		return Result{}
	case SetNodeState:
		return applySetNodeState(m, c)
	case RemoveNode:
		return applyRemoveNode(m, c)
	case UpdateNode:
		return applyUpdateNode(m, c)
	case CreateCluster:
		return applyCreate(m, c)
	case AddNode:
		return applyAddNode(m, c)
	case AddReplica:
		return applyAddReplica(m, c)
	case SetRole:
		for i, r := range m.groupReplicas(c.Group) {
			if r.ID == c.Replica {
				m.Groups[c.Group].Replicas[i].Role = c.Role
				return Result{Replica: r.ID}
			}
		}
		return refused(CodeNoSuchReplica, "no such replica")
	case RemoveReplica:
		rs := m.groupReplicas(c.Group)
		i := slices.IndexFunc(rs, func(r Replica) bool { return r.ID == c.Replica })
		if i < 0 {
			return refused(CodeNoSuchReplica, "no such replica")
		}
		m.Groups[c.Group].Replicas = slices.Delete(rs, i, i+1)
		return Result{Replica: c.Replica}
	}
	return refused(CodeMalformed, "unknown metadata command %s", c.Op())
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

func applyCreate(m *Map, c CreateCluster) Result {
	if m.ClusterID != "" {
		return refused(CodeAlreadyCreated, "cluster already created")
	}
	if c.Partitions < 1 || c.ReplicationFactor < 1 || c.ClusterID == "" {
		return refused(CodeInvalid, "create needs a cluster id, a node, partitions and a replication factor")
	}
	if c.Partitions > MaxPartitions {
		return refused(CodeInvalid, "create: %d partitions, at most %d", c.Partitions, MaxPartitions)
	}
	*m = Map{
		ClusterID:         c.ClusterID,
		Hash:              HashFNV1a64,
		Partitions:        c.Partitions,
		ReplicationFactor: c.ReplicationFactor,
		MetaVoters:        max(1, c.MetaVoters),
	}
	n := c.Node
	n.State = NodeActive
	m.Nodes = []Node{n}
	for i, id := range BootstrapReplicas(c.Partitions) {
		m.Groups = append(m.Groups, Group{ID: uint64(i), Replicas: []Replica{{ID: id, Node: n.ID, Role: RoleVoter}}})
		m.NextReplicaID = id + 1
	}
	return Result{Replica: 1}
}

func applyAddNode(m *Map, c AddNode) Result {
	if c.Node.ID == "" || c.Node.Addr == "" {
		return refused(CodeInvalid, "add_node needs a node id and address")
	}
	n := c.Node
	n.State = NodeActive
	if slices.ContainsFunc(m.Revoked, func(r Revocation) bool { return r.Fingerprint == n.CertFP && n.CertFP != "" }) {
		return refused(CodeCertRevoked, "the certificate of node %s is revoked", n.ID)
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
		return refused(CodeNodeIDTaken, ReasonNodeIDTaken)
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

func applyAddReplica(m *Map, c AddReplica) Result {
	if c.Group >= uint64(len(m.Groups)) {
		return refused(CodeNoSuchGroup, "no such group")
	}
	if _, ok := m.Node(c.NodeID); !ok {
		return refused(CodeNoSuchNode, "no such node")
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

func applySetNodeState(m *Map, c SetNodeState) Result {
	n, ok := m.Node(c.NodeID)
	if !ok {
		return refused(CodeNoSuchNode, "no such node")
	}
	if c.State != NodeActive && c.State != NodeDraining {
		return refused(CodeInvalid, "unknown node state %s", c.State)
	}
	n.State = c.State
	return Result{}
}

func applyUpdateNode(m *Map, c UpdateNode) Result {
	old, ok := m.Node(c.Node.ID)
	if !ok || old.Incarnation != c.Node.Incarnation {
		return refused(CodeNoSuchNode, "no such node")
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
func applyRemoveNode(m *Map, c RemoveNode) Result {
	n, ok := m.Node(c.NodeID)
	if !ok {
		return refused(CodeNoSuchNode, "no such node")
	}
	if !c.Dead {
		if n.State != NodeDraining {
			return refused(CodeNotDrained, "node %s is neither drained nor dead: drain it first", c.NodeID)
		}
		if held := m.HeldBy(c.NodeID); held.Total() > 0 {
			return refused(CodeNotDrained, "node %s is still draining: it holds %s", c.NodeID, held)
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

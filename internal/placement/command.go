package placement

// Tag is the first byte of every metadata command.
const Tag byte = 'M'

// Command is one metadata command: CreateCluster, AddNode, AddReplica,
// SetRole, RemoveReplica, Fence, SetNodeState, RemoveNode, UpdateNode,
// AddToken, RevokeToken or RotateGossipKey. Encode makes its wire form and
// DecodeCommand reads it back (command_codec.go).
//
// AddReplica, SetRole, RemoveReplica and Fence are decided by the placement
// controller on the metadata leader and carry its Raft term: a command whose
// term is below the map's was decided by a deposed leader and is refused
// (CodeStaleTerm); a higher term raises the map's. A term of 0 is not
// fenced. The other commands come from joins and operators and are never
// fenced.
type Command interface {
	// Op names the command in logs and errors ("add_node").
	Op() string
	kind() byte
}

// CreateCluster makes the cluster: its identity, its size and its first
// node, which gets a voter of the metadata group and of every partition.
// Refused once a cluster exists. The secrets it brings are stored beside
// the map, never in it.
type CreateCluster struct {
	ClusterID string
	// Partitions is P, at least 1 and at most MaxPartitions.
	Partitions        int
	ReplicationFactor int
	// MetaVoters is the target number of metadata voters; below 1 is 1.
	MetaVoters int
	Node       Node
	// CA is the cluster CA; nil in an insecure cluster or one on the
	// operator's PKI.
	CA *CASecret
	// GossipKey is the first gossip key; empty to gossip in plaintext.
	GossipKey []byte
	// Token is the first join token; nil without a cluster CA.
	Token *JoinToken
}

// AddNode adds a node to the map with a metadata replica (a voter while the
// group has fewer than MetaVoters, else a learner). The same join again (same
// id, incarnation and certificate) changes nothing and answers the same; any
// other claim on a member's id is refused (CodeNodeIDTaken).
type AddNode struct {
	Node Node
	// Cert is the certificate (DER) the node joins with; Node.CertFP is its
	// fingerprint. Kept so that a retried join gets it again.
	Cert []byte
}

// AddReplica gives a group a replica on a node (Role, empty meaning voter);
// a node that holds one already keeps it. Fenced by Term.
type AddReplica struct {
	Term   uint64
	Group  uint64
	NodeID string
	Role   string
}

// SetRole changes the role a replica should have. Fenced by Term.
type SetRole struct {
	Term    uint64
	Group   uint64
	Replica uint64
	Role    string
}

// RemoveReplica drops a replica from the map; the group's leader then
// removes it from Raft. Fenced by Term.
type RemoveReplica struct {
	Term    uint64
	Group   uint64
	Replica uint64
}

// Fence raises the map's term to the proposer's: a new metadata leader
// proposes it before deciding anything, so every command of a deposed
// leader that was still in the log is applied first, and any later one is
// refused.
type Fence struct {
	Term uint64
}

// SetNodeState marks a node draining (NodeDraining) or active again
// (NodeActive).
type SetNodeState struct {
	NodeID string
	State  string
}

// RemoveNode forgets a node and every replica it holds, and revokes its
// certificate: only a drained node, or one the proposer's gossip saw dead
// (Dead).
type RemoveNode struct {
	NodeID string
	Dead   bool
}

// UpdateNode refreshes the addresses of a member of the same incarnation (a
// gossip port picked at start); empty addresses stay as they are. It never
// adds a node.
type UpdateNode struct {
	Node Node
}

// AddToken records a join token (its hash, never its secret).
type AddToken struct {
	Token JoinToken
}

// RevokeToken forgets a join token.
type RevokeToken struct {
	ID string
}

// RotateGossipKey puts a new gossip key in use; the one before stays
// accepted until the next rotation.
type RotateGossipKey struct {
	Key []byte
}

// Kind bytes, the third byte of a command's binary form (after Tag and the
// codec version). Never renumber one: logs hold them.
const (
	kindCreateCluster   byte = 1
	kindAddNode         byte = 2
	kindAddReplica      byte = 3
	kindSetRole         byte = 4
	kindRemoveReplica   byte = 5
	kindFence           byte = 6
	kindSetNodeState    byte = 7
	kindRemoveNode      byte = 8
	kindUpdateNode      byte = 9
	kindAddToken        byte = 10
	kindRevokeToken     byte = 11
	kindRotateGossipKey byte = 12
)

func (CreateCluster) kind() byte   { return kindCreateCluster }
func (AddNode) kind() byte         { return kindAddNode }
func (AddReplica) kind() byte      { return kindAddReplica }
func (SetRole) kind() byte         { return kindSetRole }
func (RemoveReplica) kind() byte   { return kindRemoveReplica }
func (Fence) kind() byte           { return kindFence }
func (SetNodeState) kind() byte    { return kindSetNodeState }
func (RemoveNode) kind() byte      { return kindRemoveNode }
func (UpdateNode) kind() byte      { return kindUpdateNode }
func (AddToken) kind() byte        { return kindAddToken }
func (RevokeToken) kind() byte     { return kindRevokeToken }
func (RotateGossipKey) kind() byte { return kindRotateGossipKey }

// Op names, as the legacy JSON form spelled them.
func (CreateCluster) Op() string   { return "create" }
func (AddNode) Op() string         { return "add_node" }
func (AddReplica) Op() string      { return "add_replica" }
func (SetRole) Op() string         { return "set_role" }
func (RemoveReplica) Op() string   { return "remove_replica" }
func (Fence) Op() string           { return "fence" }
func (SetNodeState) Op() string    { return "set_node_state" }
func (RemoveNode) Op() string      { return "remove_node" }
func (UpdateNode) Op() string      { return "update_node" }
func (AddToken) Op() string        { return "add_token" }
func (RevokeToken) Op() string     { return "revoke_token" }
func (RotateGossipKey) Op() string { return "rotate_gossip_key" }

// fenceTerm returns the term a command is fenced by (0: not fenced).
func fenceTerm(c Command) uint64 {
	switch c := c.(type) {
	case AddReplica:
		return c.Term
	case SetRole:
		return c.Term
	case RemoveReplica:
		return c.Term
	case Fence:
		return c.Term
	}
	return 0
}

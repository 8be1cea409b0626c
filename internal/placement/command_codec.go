package placement

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/parley-chat/parley/internal/wire"
)

// codecVersion is the second byte of every binary command, after Tag. The
// legacy JSON form has JSON there instead (command_legacy.go), which never
// starts with this byte.
const codecVersion byte = 1

// Flag bits of CreateCluster, the byte after its kind. Unknown bits are
// refused.
const (
	flagCA      byte = 1 << iota // a CASecret follows the node
	flagToken                    // a JoinToken follows the gossip key
	createFlags = flagCA | flagToken
)

// errMalformed is the cause of every DecodeCommand error.
var errMalformed = errors.New("placement: malformed command")

// Encode returns the binary form of c:
//
//	Tag, codecVersion, kind, fields
//
// where the fields are, by kind (str and bytes are a uvarint length and that
// many bytes, possibly none; int a uvarint of the two's complement; bool a
// byte 0 or 1):
//
//	CreateCluster    flags, str ClusterID, int Partitions, int ReplicationFactor,
//	                 int MetaVoters, node, [CA], bytes GossipKey, [token]
//	AddNode          node, bytes Cert
//	AddReplica       uvarint Term, uvarint Group, str NodeID, str Role
//	SetRole          uvarint Term, uvarint Group, uvarint Replica, str Role
//	RemoveReplica    uvarint Term, uvarint Group, uvarint Replica
//	Fence            uvarint Term
//	SetNodeState     str NodeID, str State
//	RemoveNode       str NodeID, bool Dead
//	UpdateNode       node
//	AddToken         token
//	RevokeToken      str ID
//	RotateGossipKey  bytes Key
//
//	node   str ID, str Incarnation, str Addr, str HTTPAddr, str GossipAddr,
//	       str Zone, str State, str CertFP, bool Standby
//	CA     bytes Cert, bytes Key
//	token  str ID, str Hash, str Name, int CreatedMs, int ExpiresMs
//
// A new field or command takes a new kind or a new codecVersion; the
// decoder refuses what it does not know.
func Encode(c Command) []byte {
	b := []byte{Tag, codecVersion, c.kind()}
	switch c := c.(type) {
	case CreateCluster:
		var flags byte
		if c.CA != nil {
			flags |= flagCA
		}
		if c.Token != nil {
			flags |= flagToken
		}
		b = append(b, flags)
		b = wire.AppendString(b, c.ClusterID)
		b = appendInt(appendInt(appendInt(b, int64(c.Partitions)), int64(c.ReplicationFactor)), int64(c.MetaVoters))
		b = appendNode(b, c.Node)
		if c.CA != nil {
			b = wire.AppendBytes(wire.AppendBytes(b, c.CA.Cert), c.CA.Key)
		}
		b = wire.AppendBytes(b, c.GossipKey)
		if c.Token != nil {
			b = appendToken(b, *c.Token)
		}
	case AddNode:
		b = wire.AppendBytes(appendNode(b, c.Node), c.Cert)
	case AddReplica:
		b = binary.AppendUvarint(binary.AppendUvarint(b, c.Term), c.Group)
		b = wire.AppendString(wire.AppendString(b, c.NodeID), c.Role)
	case SetRole:
		b = binary.AppendUvarint(binary.AppendUvarint(binary.AppendUvarint(b, c.Term), c.Group), c.Replica)
		b = wire.AppendString(b, c.Role)
	case RemoveReplica:
		b = binary.AppendUvarint(binary.AppendUvarint(binary.AppendUvarint(b, c.Term), c.Group), c.Replica)
	case Fence:
		b = binary.AppendUvarint(b, c.Term)
	case SetNodeState:
		b = wire.AppendString(wire.AppendString(b, c.NodeID), c.State)
	case RemoveNode:
		b = appendBool(wire.AppendString(b, c.NodeID), c.Dead)
	case UpdateNode:
		b = appendNode(b, c.Node)
	case AddToken:
		b = appendToken(b, c.Token)
	case RevokeToken:
		b = wire.AppendString(b, c.ID)
	case RotateGossipKey:
		b = wire.AppendBytes(b, c.Key)
	}
	return b
}

func appendInt(b []byte, v int64) []byte { return binary.AppendUvarint(b, uint64(v)) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendNode(b []byte, n Node) []byte {
	for _, s := range []string{n.ID, n.Incarnation, n.Addr, n.HTTPAddr, n.GossipAddr, n.Zone, n.State, n.CertFP} {
		b = wire.AppendString(b, s)
	}
	return appendBool(b, n.Standby)
}

func appendToken(b []byte, t JoinToken) []byte {
	b = wire.AppendString(wire.AppendString(wire.AppendString(b, t.ID), t.Hash), t.Name)
	return appendInt(appendInt(b, t.CreatedMs), t.ExpiresMs)
}

// DecodeCommand decodes a metadata command: the binary form Encode makes
// or, for commands found in the Raft logs of older data directories, the
// legacy JSON form. It accepts only canonical binary encodings (minimal
// varints, bools of 0 or 1, no unknown kind or flag, no trailing bytes), so
// every binary command it accepts re-encodes to the same bytes. It never
// panics.
func DecodeCommand(cmd []byte) (Command, error) {
	c, _, err := decode(cmd)
	return c, err
}

// legacyForm reports whether cmd is a metadata command in the legacy JSON
// form (or garbage after the tag, which that decoder refuses).
func legacyForm(cmd []byte) bool { return len(cmd) >= 2 && cmd[0] == Tag && cmd[1] != codecVersion }

// decode is DecodeCommand that also returns the term the command is fenced
// by: a legacy command could carry one on any op.
func decode(cmd []byte) (Command, uint64, error) {
	if len(cmd) < 2 || cmd[0] != Tag {
		return nil, 0, fmt.Errorf("%w: missing tag", errMalformed)
	}
	if legacyForm(cmd) {
		return decodeLegacy(cmd[1:])
	}
	c, err := decodeBinary(cmd[2:])
	if err != nil {
		return nil, 0, err
	}
	return c, fenceTerm(c), nil
}

func decodeBinary(b []byte) (Command, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: missing kind", errMalformed)
	}
	r := &reader{b: b[1:]}
	var c Command
	switch b[0] {
	case kindCreateCluster:
		c = r.create()
	case kindAddNode:
		c = AddNode{Node: r.node(), Cert: r.bytes()}
	case kindAddReplica:
		c = AddReplica{Term: r.uvarint(), Group: r.uvarint(), NodeID: r.str(), Role: r.str()}
	case kindSetRole:
		c = SetRole{Term: r.uvarint(), Group: r.uvarint(), Replica: r.uvarint(), Role: r.str()}
	case kindRemoveReplica:
		c = RemoveReplica{Term: r.uvarint(), Group: r.uvarint(), Replica: r.uvarint()}
	case kindFence:
		c = Fence{Term: r.uvarint()}
	case kindSetNodeState:
		c = SetNodeState{NodeID: r.str(), State: r.str()}
	case kindRemoveNode:
		c = RemoveNode{NodeID: r.str(), Dead: r.bool()}
	case kindUpdateNode:
		c = UpdateNode{Node: r.node()}
	case kindAddToken:
		c = AddToken{Token: r.token()}
	case kindRevokeToken:
		c = RevokeToken{ID: r.str()}
	case kindRotateGossipKey:
		c = RotateGossipKey{Key: r.bytes()}
	default:
		return nil, fmt.Errorf("%w: unknown kind %d", errMalformed, b[0])
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(r.b))
	}
	return c, nil
}

// reader reads fields in order; after the first error it reads zeros and
// keeps that error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	v, r.b, r.err = wire.Uvarint(r.b, errMalformed)
	return v
}

func (r *reader) int() int64 { return int64(r.uvarint()) }

// bytes returns a copy: a command's values outlive its buffer.
func (r *reader) bytes() []byte {
	if r.err != nil {
		return nil
	}
	var v []byte
	v, r.b, r.err = wire.Bytes(r.b, errMalformed)
	return slices.Clone(v)
}

func (r *reader) str() string { return string(r.bytes()) }

func (r *reader) byte1() byte {
	if r.err == nil && len(r.b) == 0 {
		r.err = fmt.Errorf("%w: truncated", errMalformed)
	}
	if r.err != nil {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) bool() bool {
	v := r.byte1()
	if v > 1 && r.err == nil {
		r.err = fmt.Errorf("%w: bool byte %d", errMalformed, v)
	}
	return v == 1
}

func (r *reader) node() Node {
	n := Node{ID: r.str(), Incarnation: r.str(), Addr: r.str(), HTTPAddr: r.str(), GossipAddr: r.str(),
		Zone: r.str(), State: r.str(), CertFP: r.str()}
	n.Standby = r.bool()
	return n
}

func (r *reader) token() JoinToken {
	return JoinToken{ID: r.str(), Hash: r.str(), Name: r.str(), CreatedMs: r.int(), ExpiresMs: r.int()}
}

func (r *reader) create() CreateCluster {
	flags := r.byte1()
	if flags&^createFlags != 0 && r.err == nil {
		r.err = fmt.Errorf("%w: unknown flags %#x", errMalformed, flags)
	}
	c := CreateCluster{ClusterID: r.str(), Partitions: int(r.int()), ReplicationFactor: int(r.int()), MetaVoters: int(r.int()),
		Node: r.node()}
	if flags&flagCA != 0 {
		c.CA = &CASecret{Cert: r.bytes(), Key: r.bytes()}
	}
	c.GossipKey = r.bytes()
	if flags&flagToken != 0 {
		t := r.token()
		c.Token = &t
	}
	return c
}

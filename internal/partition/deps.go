package partition

import (
	"context"

	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/transport"
)

// Deps is what the request path needs from the node it runs on.
type Deps struct {
	// Engine runs this node's replicas.
	Engine *multiraft.Engine
	// DB holds their state.
	DB *storage.DB
	// Directory says where replicas are.
	Directory Directory
	// Caller makes internal calls to other nodes.
	Caller Caller
	// Self is this node's internal address as the cluster map records it:
	// what Directory answers for this node's replicas.
	Self string
	// ClusterProtocol returns the internal protocol every node of the
	// cluster speaks (compat.ClusterProtocol); nil: this build's. The
	// router forwards proposals in the binary encoding only once it is
	// BinaryProtocol or newer.
	ClusterProtocol func() int
}

// Directory answers from the current cluster map. It is safe for concurrent
// use.
type Directory interface {
	// Partitions returns the number of partitions, P (ids 1..P).
	Partitions() int
	// AddrOf returns the internal address of the node holding a replica.
	AddrOf(replica uint64) (addr string, ok bool)
	// ReplicaAddrs returns the internal addresses of the nodes holding a
	// group's replicas.
	ReplicaAddrs(group uint64) []string
}

// Caller makes one internal call and returns the reply's bytes.
// *transport.Transport implements it; errors about the connection wrap
// transport.ErrUnreachable.
type Caller interface {
	Call(ctx context.Context, addr, method string, body []byte) ([]byte, error)
}

var _ Caller = (*transport.Transport)(nil)

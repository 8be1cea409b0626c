package state

import "context"

// Replicator is what a domain Service needs from the replication engine:
// find a key's partition, propose a command there, read a partition's
// state. The node's router implements it over Raft; statetest.Replicator
// is an in-memory one for tests. Declared once here for every domain, so
// one engine adapter serves them all.
type Replicator interface {
	// PartitionOf returns the partition (Raft group id) that owns a routing key.
	PartitionOf(routingKey string) uint64
	// Partitions returns all partition ids.
	Partitions() []uint64
	// Propose replicates cmd in partition p and returns Apply's result once
	// applied. dedupKey non-empty makes the command idempotent: a second
	// proposal with the same dedupKey within the dedup window returns the
	// first result.
	Propose(ctx context.Context, p uint64, dedupKey string, cmd []byte) ([]byte, error)
	// Read runs fn against partition p's state: linearizable (ReadIndex)
	// unless stale, when it reads the local replica (or the nearest one) and
	// returns how stale it may be in ms.
	Read(ctx context.Context, p uint64, stale bool, fn func(r Reader) error) (staleMs int64, err error)
}

// Package placement decides where data lives: the stable hash from routing
// key to partition, the cluster map (nodes, partitions and their replicas)
// held by the metadata Raft group, the deterministic commands that change it,
// and the pure decisions of which replica to add or promote next.
package placement

import "github.com/parley-chat/parley/internal/partkey"

// HashFNV1a64 names the partitioning hash recorded in the cluster map.
const HashFNV1a64 = partkey.FNV1a64

// MetaGroup is the Raft group id of the metadata group; partitions are groups
// 1..P.
const MetaGroup uint64 = 0

// PartitionOf returns the partition (Raft group id, 1..partitions) that owns a
// routing key: partkey.Of, FNV-1a 64 of the key modulo the partition count. It
// is stable across processes, machines and releases.
func PartitionOf(routingKey string, partitions int) uint64 {
	return partkey.Of(routingKey, partitions)
}

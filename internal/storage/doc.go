// Package storage keeps all Raft logs and all partition state of one node in one Pebble database.
//
// A node runs many Raft groups (one per partition replica). Every group's log, hard state,
// applied state and partition state live in the same Pebble database under group-scoped key
// prefixes, so that one driver round of the multi-Raft loop can persist the work of every group
// with a single [Batch] and a single fsync. [GroupStorage] implements raft.Storage for one group
// on top of that database; snapshots are streamed straight out of pinned Pebble snapshots with
// [DB.SnapshotData] and installed with [DB.PrepareSnapshot] and [Batch.ApplySnapshot].
//
// See DESIGN.md in this directory for the key layout and the locking rules.
package storage

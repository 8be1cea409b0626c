// Package multiraft drives every Raft group of one node — the metadata group
// and each partition's group — from one loop, on one Pebble store, with one
// batch and at most one fsync per round for all groups.
//
// The loop follows go.etcd.io/raft's Ready contract in its synchronous form,
// as etcd's server does: a leader sends its messages before its own append is
// durable (the append runs in parallel with replication, Raft thesis 10.2.1);
// every other message leaves only after the round's batch is committed, synced
// whenever any group's Ready.MustSync asks for it. Committed entries are
// applied into that same batch, together with each group's applied index and
// membership, so a restart resumes exactly after the last applied entry.
//
// Proposals carry an id that Apply remembers for the dedup window: the
// engine's and the client's retries never apply a command twice. Reads use
// ReadIndex, batched so that concurrent reads of a group share one round.
// See DESIGN.md.
package multiraft

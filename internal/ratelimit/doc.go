// Package ratelimit holds the pure logic of Parley's per-user and
// per-address limits: token buckets for rates, leased counters for
// concurrency, and the bookkeeping a node keeps between itself and the owner
// of a key. It uses only the standard library and internal/errs; it knows
// nothing about routing, RPCs or HTTP (the node wires those, see
// internal/node/limits.go), and every method takes the time it runs at, so
// tests drive it with a fake clock.
//
// # Owners and requesters
//
// Every limited key (a username, a client address) has one owner in the
// cluster, the leader of the partition the key hashes to. The owner keeps a
// Table: one token bucket per (rate limit, key) and one leased counter per
// (concurrency limit, key). Other nodes ask the owner.
//
// A requesting node keeps two things per key:
//
//   - a Stash of tokens it took from the owner ahead of need (a batch that
//     grows while the key keeps spending and shrinks to one when it pauses),
//     and of the owner's last refusal, so a flood is refused locally until
//     the bucket has refilled. Tokens only ever leave the owner's bucket, so
//     batching never lets a key exceed its rate across the cluster: it can
//     only make one node refuse while another still holds a few tokens;
//   - Holdings: how many concurrent slots it uses and how many the owner has
//     granted it. A slot released locally is kept for a moment (a long-poll
//     loop takes it again without asking anyone), then the count is synced
//     down; every count is renewed every few seconds and lapses at the owner
//     LeaseTTL after its last renewal, so the slots of a node that died come
//     back by themselves.
//
// Messages about slots carry absolute counts ("holder H uses n slots of key
// K") and a sequence number per holder, so they are idempotent and a
// reordered older message cannot undo a newer one.
package ratelimit

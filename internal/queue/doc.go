// Package queue is Parley's replicated message-queue domain (seed 5, the
// message-queuing middleware): the binary commands, the deterministic state
// machine that applies them to one partition's state, pure reads over that
// state, and the Service that turns the queue API calls into proposals
// through a state.Replicator that the engine implements.
//
// The package uses only the standard library, internal/state and
// internal/errs; it knows nothing about Raft, Pebble or HTTP.
//
// # Semantics
//
// A queue lives in the partition its name hashes to; every command names its
// queue first, so the engine routes on it. A message has an id that grows by
// one with every send to the queue (gap-free, starting at 1), a sender, an
// optional receiver ("" means anyone), the leader-stamped time of its send
// (non-decreasing within the queue) and a body. Receivers take messages in id
// order, which is send order.
//
// Messages also have a priority (0 to 9, higher received first; send order
// within a priority), may be delayed, expire (TTL), belong to a FIFO group,
// and die into a dead-letter queue; DESIGN.md explains how those parts work.
//
// A user may take a message addressed to them or to anyone, optionally only
// from one sender. Receive without an ack timeout removes the message at once.
// With an ack timeout the message is leased instead: it is returned with a
// receipt and stays invisible while the lease lasts, that is while the
// command's meta.TimeMs <= the lease's expiry. Only the user who received it
// may Ack it; an Ack after the lease has lapsed, or with a receipt that is not
// the caller's current lease, is refused with errs.Conflict. Once a lease has
// lapsed the message is eligible again at its original position, and the
// next receive reports one more delivery. Peek returns the message Receive
// would take, without taking it.
//
// Leases lapse by time, not by command: the state machine returns lapsed
// leases to the queue ("reaps" them) during every later Send, Receive or Ack
// on the queue, at most MaxReapPerApply of them per command so that one
// command never does unbounded work. The queue record keeps a lower bound of
// the earliest lease expiry, so commands look at the lease index only when a
// lease may have lapsed. Reads (Peek, Waiting, the long-poll probe) take a
// wall-clock time and treat a lapsed but not yet reaped lease as eligible,
// within the same bound.
//
// Receipts are deterministic: the message id and the Raft index of the
// receive that leased it, base64url-encoded. They are not secrets: Apply
// accepts an Ack only from the lease's holder, and answers every other user
// as if the receipt were unknown.
//
// User names (senders, receivers, the "to" and "from" filters, queue
// creators) are matched case-insensitively, as usernames are unique without
// regard to case; they are stored as given. Queue names are case-sensitive.
//
// # Key layout
//
// All keys are relative to the partition and start with "q/". Queue and user
// names never contain '/' or '!' (they are 1 to 255 bytes of [A-Za-z0-9_.-];
// the Service enforces 1 to 64 for queue names), so the layout below cannot be
// confused. <id> is a message id and <exp> a lease expiry in Unix ms, both as
// 8 bytes big endian (the expiry with its sign bit flipped so that it sorts);
// <user> is a user name folded to lower case; <pos> is a position: one byte
// 9 minus the priority, then the id, so that higher priorities sort first.
//
//	q/!/<queue>                            queue record: next id, counts, times, floors, settings, creator
//	q/<queue>/m/<id>                       message record: times, state, lease, names, reasons, body
//	q/<queue>/a/<pos>                      ready message for anyone
//	q/<queue>/r/<user>/<pos>               ready message for one receiver
//	q/<queue>/s/<user>/a/<pos>             ready message for anyone, by sender
//	q/<queue>/s/<user>/r/<user>/<pos>      ready message for one receiver, by sender
//	q/<queue>/l/<exp>/<id>                 leased or delayed message, by lease expiry or delivery time
//	q/<queue>/e/<exp>/<id>                 message with a TTL, not leased, by expiry
//	q/<queue>/f/<index>                    floor of a ready index: 9 bytes, a position
//	q/<queue>/g/<group>                    FIFO group: active message, waiting count, floor
//	q/<queue>/w/<group>/<id>               message waiting behind its group's active one
//	q/<queue>/o/<seq>                      outbox: a message on its way to another queue
//	q/<queue>/i/<source>                   import mark: what was taken from a source's outbox
//
// A message is "ready" while it is stored, not leased, delayed or waiting
// behind its group; it then has exactly two index entries (a/ or r/, and the
// matching s/ entry) and no l/ entry. A leased or delayed message has an l/
// entry and no ready entries (DESIGN.md has the table of states). Index values are
// empty. Receive and Peek find the oldest eligible message with two seeks
// (the receiver's and the anyone index, or their by-sender twins) and never
// scan the queue.
//
// <index> is a ready index's prefix after "q/<queue>/" ("a/", "r/<user>/",
// ...). Its floor is a lower bound of the positions in that index, and the seeks
// start there: deleted index entries stay in the store (as tombstones) until
// it compacts them, and a seek from the start of an index would step over
// every message taken since. A receive raises the floors of the indexes it
// looked at to what it found (past the message it takes, to the queue's next
// id at rank 0 for an index found empty); every message entering an index (a
// send, a reaped lease, an ended delay) lowers the floors it passes. An index
// without a floor key starts at 0. Deleting a queue deletes its record and
// everything under
// "q/<queue>/". Queue records sit apart under "q/!/" so that List and Waiting
// visit queues without visiting messages.
//
// # Long polling
//
// Service.Receive with a wait long-polls: it proposes one receive; when that
// finds nothing it waits until the queue may have a message for the caller,
// checks with a cheap (stale) read, and proposes again only when the read
// finds one, until a message arrives or the wait ends. What it waits on:
//   - a Notifier, when configured: the partition layer wakes waiters when it
//     applies a command that can make messages available (see TouchedKey);
//   - otherwise polling with the probe read, every Config.PollMin at first,
//     doubling up to Config.PollMax;
//   - in both cases a timer for the earliest lease expiry in the queue, since
//     a lapsing lease makes a message eligible without any command.
//
// Each attempt of a long poll carrying an idempotency key uses its own dedup
// key (the idempotency key and the attempt number), so a retried long poll
// replays the first one's attempts and returns the message it took.
package queue

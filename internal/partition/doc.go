// Package partition is the product's request path over the multi-Raft
// engine: from any node, propose a command to a partition and read its state,
// forwarding to the leader or a replica over the internal transport and
// retrying across leader changes (Router); answer those forwarded calls from
// this node's replicas (Server); the partitions' state machine, one domain per
// command tag (StateMachine); one apply notifier that wakes waiters of every
// domain once what they wait for is durable and visible (Notifier); and the
// live feeds of rooms for the stream Hub (Feeds).
//
// Everything takes a Deps — the engine, the store, a Directory of addresses
// and a Caller for internal calls — never the node that wires it, so the
// package reads and tests alone. The node decides who may call what (its
// table of internal methods); this package serves what it is handed. See
// DESIGN.md.
package partition

// Package webhook delivers Parley's outgoing webhooks (docs/API.md
// "Outgoing webhooks"): the node's guard against server-side request
// forgery (which addresses a hook may point at, checked when the hook is
// made and again on every connection), the signature of a delivery, and the
// Dispatcher that the leader of each partition runs to deliver its outbox.
//
// The rooms domain (internal/chat) keeps the hooks, the outbox and the
// delivery log in replicated state and decides deterministically what is
// due and what an attempt's outcome does; this package does the I/O: it
// resolves names, dials, POSTs and reports each attempt back as a proposal.
// DESIGN.md says why it is built so.
package webhook

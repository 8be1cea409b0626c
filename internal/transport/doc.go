// Package transport carries all node-to-node traffic of a Parley node over
// one listener: Raft messages of every group, snapshot streams and
// request/response calls.
//
// Every connection starts with one byte naming its protocol ('R' for a Raft
// message stream, 'C' for calls, 'S' for one snapshot stream) followed by a
// handshake frame carrying the sender's node id, listen address and cluster
// id. The receiver answers with an acknowledgement or a one-line refusal, so a
// dialer can report a cluster id mismatch instead of a bare disconnect.
//
// Raft messages are queued per peer and written by one sender goroutine per
// peer, which batches everything queued into one frame per write. Calls are
// multiplexed with request ids over at most two persistent connections per
// peer. Snapshots use a dedicated connection each. See DESIGN.md for the wire
// format, the reasons behind it and the lock order.
package transport

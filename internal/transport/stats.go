package transport

import (
	"net"
	"sync/atomic"
)

// Stats is a snapshot of a Transport's counters, all cumulative since New.
type Stats struct {
	// RaftSent counts Raft messages written to a connection.
	RaftSent uint64
	// RaftDropped counts Raft messages dropped: queue full, drop rate,
	// isolation, unreachable peer, failed write or too large for a frame.
	RaftDropped uint64
	// RaftReceived counts Raft messages delivered to Handler.HandleRaft.
	RaftReceived uint64
	// RaftFramesSent counts raft batch frames written (keepalives excluded).
	RaftFramesSent uint64
	// RaftFramesReceived counts raft batch frames read (keepalives excluded).
	RaftFramesReceived uint64
	// BytesSent counts bytes written to connections of every protocol,
	// including TLS overhead.
	BytesSent uint64
	// BytesReceived counts bytes read from connections of every protocol.
	BytesReceived uint64
	// CallsSent counts calls started with Call.
	CallsSent uint64
	// CallsFailed counts calls that returned an error, remote or local.
	CallsFailed uint64
	// CallsServed counts requests answered by Handler.HandleCall.
	CallsServed uint64
	// SnapshotsSent counts snapshot streams the receiver accepted.
	SnapshotsSent uint64
	// SnapshotsReceived counts snapshot streams handled without error.
	SnapshotsReceived uint64
}

// counters are the live counters behind Stats.
type counters struct {
	raftSent, raftDropped, raftReceived atomic.Uint64
	raftFramesSent, raftFramesReceived  atomic.Uint64
	bytesSent, bytesReceived            atomic.Uint64
	callsSent, callsFailed, callsServed atomic.Uint64
	snapshotsSent, snapshotsReceived    atomic.Uint64
}

// snapshot copies the counters.
func (c *counters) snapshot() Stats {
	return Stats{
		RaftSent:           c.raftSent.Load(),
		RaftDropped:        c.raftDropped.Load(),
		RaftReceived:       c.raftReceived.Load(),
		RaftFramesSent:     c.raftFramesSent.Load(),
		RaftFramesReceived: c.raftFramesReceived.Load(),
		BytesSent:          c.bytesSent.Load(),
		BytesReceived:      c.bytesReceived.Load(),
		CallsSent:          c.callsSent.Load(),
		CallsFailed:        c.callsFailed.Load(),
		CallsServed:        c.callsServed.Load(),
		SnapshotsSent:      c.snapshotsSent.Load(),
		SnapshotsReceived:  c.snapshotsReceived.Load(),
	}
}

// countingConn counts the bytes moving through a connection.
type countingConn struct {
	net.Conn
	c *counters
}

// Read reads from the connection and counts the bytes read.
func (cc countingConn) Read(p []byte) (int, error) {
	n, err := cc.Conn.Read(p)
	cc.c.bytesReceived.Add(uint64(n))
	return n, err
}

// Write writes to the connection and counts the bytes written.
func (cc countingConn) Write(p []byte) (int, error) {
	n, err := cc.Conn.Write(p)
	cc.c.bytesSent.Add(uint64(n))
	return n, err
}

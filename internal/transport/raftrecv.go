package transport

import (
	"errors"
	"io"
	"net"
)

// serveRaft reads raft batch frames from an accepted 'R' connection and
// hands them to Handler.HandleRaft until the connection ends. Frames from a
// peer isolated by Faults close the connection.
func (t *Transport) serveRaft(l *link) {
	var buf []byte
	for {
		p, err := readFrame(l.br, buf, maxRaftFrame)
		if err != nil {
			t.logStreamEnd("raft", l, err)
			return
		}
		if len(p) == 0 {
			continue // keepalive
		}
		if t.faults.isolated(l.peerAddr, l.peerID) {
			return
		}
		msgs, err := decodeRaftBatch(p)
		if err != nil {
			t.log.Warn("transport: bad raft frame", "peer", l.peerID, "err", err)
			return
		}
		buf = p
		if cap(buf) > maxRetainedBuffer {
			buf = nil
		}
		t.stats.raftFramesReceived.Add(1)
		t.stats.raftReceived.Add(uint64(len(msgs)))
		t.h.HandleRaft(l.peerID, msgs)
	}
}

// logStreamEnd logs why an incoming stream ended, at Debug for the ordinary
// reasons (peer closed, transport closing) and Warn otherwise.
func (t *Transport) logStreamEnd(kind string, l *link, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || t.ctx.Err() != nil {
		t.log.Debug("transport: stream closed", "kind", kind, "peer", l.peerID)
		return
	}
	t.log.Warn("transport: stream failed", "kind", kind, "peer", l.peerID, "err", err)
}

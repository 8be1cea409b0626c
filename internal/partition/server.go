package partition

import (
	"context"

	"github.com/parley-chat/parley/internal/state"
)

// Server answers the request path's internal calls from this node's
// replicas: proposals forwarded to a leader here, and the get and scan calls
// of remote reads, with the read sessions that keep one read on one
// snapshot. Who may call what is the node's to decide before it hands a
// request here. It is safe for concurrent use.
type Server struct {
	d        Deps
	sessions *sessions
}

// NewServer returns the server of the node d describes.
func NewServer(d Deps) *Server {
	return &Server{d: d, sessions: newSessions()}
}

// Close releases every read session. Call it once no call can reach the
// server any more (the transport is closed) and before the store closes.
func (s *Server) Close() { s.sessions.closeAll() }

// Propose answers a propose call: the local replica proposes (it fails with
// NotLeader, or NoReplica, when it cannot).
func (s *Server) Propose(ctx context.Context, req ProposeRequest) Reply {
	return ReplyOf(s.d.Engine.Propose(ctx, req.Group, req.ID, req.Cmd))
}

// Read answers a get or scan call (method) from one snapshot of this node's
// replica: a new one (after a read index when req.Linearizable), kept as a
// session when req.Hold, or the session's (req.Session). The reply carries
// the snapshot's applied index.
func (s *Server) Read(ctx context.Context, method string, req ReadRequest) Reply {
	if req.Session != 0 {
		var reply Reply
		err := s.sessions.read(req.Session, req.Group, func(snap *localSnapshot, applied uint64) {
			reply = readReply(snap, method, req)
			reply.StaleMs, reply.Applied = snap.staleMs, applied
		})
		if err != nil {
			return ReplyOf(nil, err)
		}
		return reply
	}
	snap, err := s.d.snapshotLocal(ctx, req.Group, req.Linearizable)
	if err != nil {
		return ReplyOf(nil, err)
	}
	applied, err := snap.Applied()
	switch {
	case err != nil:
		snap.close()
		return ReplyOf(nil, err)
	case req.Same && applied != req.At:
		snap.close()
		return ReplyOf(nil, errReadMoved)
	}
	reply := readReply(snap, method, req)
	reply.StaleMs, reply.Applied = snap.staleMs, applied
	if !req.Hold || reply.Code != "" {
		snap.close()
		return reply
	}
	id, err := s.sessions.add(snap, applied)
	if err != nil {
		snap.close()
		return ReplyOf(nil, err)
	}
	reply.Session = id
	return reply
}

// Release answers a read.release call: the session's snapshot is let go.
func (s *Server) Release(req ReleaseRequest) Reply {
	s.sessions.release(req.Session)
	return Reply{}
}

// readReply answers a get or scan from a replica's state.
func readReply(r state.Reader, method string, req ReadRequest) Reply {
	if method == MethodGet {
		v, ok, err := r.Get(req.Key)
		if err != nil {
			return ReplyOf(nil, err)
		}
		if !ok {
			return Reply{}
		}
		return Reply{Result: append([]byte{1}, v...)}
	}
	limit := min(max(req.Limit, 1), scanPage)
	var pairs [][2][]byte
	err := r.Scan(req.Key, req.Hi, func(k, v []byte) bool {
		pairs = append(pairs, [2][]byte{append([]byte(nil), k...), append([]byte(nil), v...)})
		return len(pairs) < limit
	})
	if err != nil {
		return ReplyOf(nil, err)
	}
	return Reply{Result: encodePairs(pairs)}
}

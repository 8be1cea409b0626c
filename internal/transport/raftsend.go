package transport

import (
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"time"
)

// SendRaft queues msgs for the peer listening at addr and returns at once.
// A per-peer sender goroutine writes everything queued as one batch per
// write, connecting and reconnecting with backoff. Messages are dropped, and
// counted in Stats.RaftDropped, when the peer's queue is full, when the peer
// is unreachable or isolated, or after Close; Raft retransmits. The caller
// must not modify msgs' entries afterwards (Raft never does).
func (t *Transport) SendRaft(addr string, msgs []GroupMessage) {
	if len(msgs) == 0 {
		return
	}
	if t.faults.isolated(addr) {
		t.stats.raftDropped.Add(uint64(len(msgs)))
		return
	}
	for {
		s := t.sender(addr)
		if s == nil {
			t.stats.raftDropped.Add(uint64(len(msgs)))
			return
		}
		if s.enqueue(msgs) {
			return
		}
		// s retired between lookup and enqueue; the next lookup makes a new one.
	}
}

// sender returns the Raft sender for addr, starting one when needed. It
// returns nil after Close.
func (t *Transport) sender(addr string) *raftSender {
	t.mu.RLock()
	s, closed := t.senders[addr], t.closed
	t.mu.RUnlock()
	if closed {
		return nil
	}
	if s != nil {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if s = t.senders[addr]; s != nil {
		return s
	}
	s = &raftSender{t: t, addr: addr, kick: make(chan struct{}, 1)}
	t.senders[addr] = s
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		s.run()
	}()
	return s
}

// raftSender owns the Raft stream to one peer: a bounded queue filled by
// SendRaft and one goroutine (run) that drains it onto the connection.
type raftSender struct {
	t    *Transport
	addr string
	kick chan struct{} // capacity 1: "the queue is not empty"

	mu      sync.Mutex
	q       []GroupMessage
	due     []time.Time // parallel to q: when each message may leave (zero: now)
	retired bool        // run has exited; enqueue must use a new sender

	// Owned by the run goroutine.
	enc       raftEncoder
	conn      *link
	dead      chan struct{} // closed when conn's watcher saw the connection end
	lastWrite time.Time
	backoff   time.Duration
	retryAt   time.Time
	failing   bool
}

// enqueue appends msgs to the queue, dropping what does not fit or what the
// drop-rate fault selects. It reports false when the sender has retired.
func (s *raftSender) enqueue(msgs []GroupMessage) bool {
	f := &s.t.faults
	var due time.Time
	if d := f.currentDelay(); d > 0 {
		due = time.Now().Add(d)
	}
	limit := s.t.cfg.MaxQueuedMessages
	dropped := 0
	s.mu.Lock()
	if s.retired {
		s.mu.Unlock()
		return false
	}
	for i := range msgs {
		if len(s.q) >= limit || f.drop() {
			dropped++
			continue
		}
		s.q = append(s.q, msgs[i])
		s.due = append(s.due, due)
	}
	s.mu.Unlock()
	if dropped > 0 {
		s.t.stats.raftDropped.Add(uint64(dropped))
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return true
}

// take moves the messages due at now to out and returns them, together with
// the due time of the first message left behind (zero when none).
func (s *raftSender) take(now time.Time, out []GroupMessage) ([]GroupMessage, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < len(s.q) && !s.due[n].After(now) {
		n++
	}
	out = append(out, s.q[:n]...)
	var next time.Time
	if n < len(s.q) {
		next = s.due[n]
	}
	rest := copy(s.q, s.q[n:])
	copy(s.due, s.due[n:])
	clear(s.q[rest:])
	s.q, s.due = s.q[:rest], s.due[:rest]
	return out, next
}

// retire stops the sender if nothing is queued; it reports whether it did.
// Lock order: Transport.mu, then raftSender.mu.
func (s *raftSender) retire() bool {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.q) > 0 {
		return false
	}
	s.retired = true
	if s.t.senders[s.addr] == s {
		delete(s.t.senders, s.addr)
	}
	return true
}

// run drains the queue until Close, or until the sender has been idle for
// timing.senderIdle.
func (s *raftSender) run() {
	defer s.disconnect()
	tm := &s.t.tm
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	lastActive := time.Now()
	var out []GroupMessage
	for {
		now := time.Now()
		var next time.Time
		if s.conn != nil || !now.Before(s.retryAt) {
			out, next = s.take(now, out[:0])
			if len(out) > 0 {
				s.send(out)
				clear(out)
				lastActive = now
				continue
			}
		}
		wake := lastActive.Add(tm.senderIdle)
		if s.conn != nil {
			wake = earliest(wake, s.lastWrite.Add(tm.keepalive))
		} else if now.Before(s.retryAt) {
			wake = earliest(wake, s.retryAt)
		}
		if !next.IsZero() {
			wake = earliest(wake, next)
		}
		timer.Reset(wake.Sub(now))
		select {
		case <-s.kick:
		case <-timer.C:
			now = time.Now()
			if s.conn != nil && !now.Before(s.lastWrite.Add(tm.keepalive)) {
				s.write(make([]byte, frameHeaderLen)) // empty frame: keepalive
			}
			if now.Sub(lastActive) >= tm.senderIdle {
				if s.retire() {
					return
				}
				lastActive = now // messages are waiting out a backoff: not idle
			}
		case <-s.dead:
			s.disconnect()
		case <-s.t.ctx.Done():
			return
		}
	}
}

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// send writes one batch, connecting first when needed. Whatever cannot be
// written is dropped and counted.
func (s *raftSender) send(msgs []GroupMessage) {
	st := &s.t.stats
	peerID := ""
	if s.conn != nil {
		peerID = s.conn.peerID
	}
	if s.t.faults.isolated(s.addr, peerID) {
		st.raftDropped.Add(uint64(len(msgs)))
		return
	}
	if s.conn == nil && !s.connect() {
		st.raftDropped.Add(uint64(len(msgs)))
		return
	}
	b, err := s.enc.encode(msgs, maxRaftFrame)
	if err != nil {
		s.t.log.Error("transport: encode raft batch", "peer", s.addr, "err", err)
		st.raftDropped.Add(uint64(len(msgs)))
		return
	}
	if b.skipped > 0 {
		s.t.log.Warn("transport: raft message larger than a frame dropped", "peer", s.addr, "count", b.skipped)
		st.raftDropped.Add(uint64(b.skipped))
	}
	if len(b.data) > 0 {
		if s.write(b.data) {
			st.raftSent.Add(uint64(b.sent))
			st.raftFramesSent.Add(uint64(b.frames))
		} else {
			st.raftDropped.Add(uint64(b.sent))
		}
	}
	s.enc.release()
}

// write writes b to the connection and reports success; on failure it
// drops the connection so the next batch redials.
func (s *raftSender) write(b []byte) bool {
	if err := s.conn.writeFull(b); err != nil {
		s.t.log.Debug("transport: raft write failed", "peer", s.addr, "err", err)
		s.disconnect()
		return false
	}
	s.lastWrite = time.Now()
	return true
}

// connect dials the peer and starts the connection's watcher. On failure it
// schedules the next attempt with exponential backoff and jitter.
func (s *raftSender) connect() bool {
	t := s.t
	l, err := t.dial(t.ctx, s.addr, protoRaft)
	if err == nil {
		dead := make(chan struct{})
		if !t.goroutine(func() { watchRaftConn(l, dead) }) {
			l.close()
			err = ErrClosed
		} else {
			s.conn, s.dead, s.lastWrite = l, dead, time.Now()
		}
	}
	if err != nil {
		s.backoff = min(max(2*s.backoff, t.tm.backoffMin), t.tm.backoffMax)
		s.retryAt = time.Now().Add(s.backoff/2 + rand.N(s.backoff/2+1))
		if !s.failing && !errors.Is(err, ErrClosed) && t.ctx.Err() == nil {
			t.log.Warn("transport: raft peer unreachable", "peer", s.addr, "err", err)
		}
		s.failing = true
		return false
	}
	if s.failing {
		t.log.Info("transport: raft peer reachable", "peer", s.addr)
	}
	s.backoff, s.failing = 0, false
	return true
}

// disconnect closes the connection, if any, and waits for its watcher.
func (s *raftSender) disconnect() {
	if s.conn == nil {
		return
	}
	s.conn.close()
	<-s.dead
	s.conn, s.dead = nil, nil
}

// watchRaftConn reads from an outgoing Raft connection, on which the peer
// never writes after the handshake, so that a peer closing it is noticed
// before the next batch is lost to a half-dead connection.
func watchRaftConn(l *link, dead chan<- struct{}) {
	defer close(dead)
	_, _ = io.Copy(io.Discard, l.br)
	l.close()
}

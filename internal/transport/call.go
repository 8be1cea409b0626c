package transport

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// callConnsPerPeer is the number of call connections kept per peer. Two
// let a large request or response on one not delay every other call.
const callConnsPerPeer = 2

// Call sends a request to the peer at addr and waits for its answer. Calls
// are multiplexed with request ids over persistent connections, so many can
// be in flight at once. The ctx deadline travels with the request and bounds
// the remote handler too; cancelling ctx returns ctx's error at once. An
// error returned by the remote HandleCall comes back as a *RemoteError;
// connection failures wrap ErrUnreachable, refused handshakes
// ErrClusterMismatch.
func (t *Transport) Call(ctx context.Context, addr, method string, body []byte) ([]byte, error) {
	t.stats.callsSent.Add(1)
	resp, err := t.call(ctx, addr, method, body)
	if err != nil {
		t.stats.callsFailed.Add(1)
		return nil, fmt.Errorf("transport: call %s on %s: %w", method, addr, err)
	}
	return resp, nil
}

// call is Call without the accounting and error context.
func (t *Transport) call(ctx context.Context, addr, method string, body []byte) ([]byte, error) {
	if len(method) > maxMethodLen {
		return nil, fmt.Errorf("method name longer than %d bytes", maxMethodLen)
	}
	if n := requestLen(1<<63, time.Hour, method, body); n > maxCallFrame {
		return nil, fmt.Errorf("request of %d bytes exceeds the %d byte frame limit", n, maxCallFrame)
	}
	if t.faults.isolated(addr) {
		return nil, fmt.Errorf("isolated by fault injection: %w", ErrUnreachable)
	}
	if d := t.faults.currentDelay(); d > 0 && !sleepCtx(ctx, d) {
		return nil, ctx.Err()
	}
	p := t.callPeer(addr)
	if p == nil {
		return nil, ErrClosed
	}
	c, err := p.conn(ctx)
	if err != nil {
		return nil, err
	}
	if t.faults.isolated(addr, c.l.peerID) {
		return nil, fmt.Errorf("peer %s isolated by fault injection: %w", c.l.peerID, ErrUnreachable)
	}
	return c.call(ctx, method, body)
}

// callPeer returns the connection pool for addr, nil after Close.
func (t *Transport) callPeer(addr string) *callPeer {
	t.mu.RLock()
	p, closed := t.callers[addr], t.closed
	t.mu.RUnlock()
	if closed {
		return nil
	}
	if p != nil {
		return p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if p = t.callers[addr]; p == nil {
		p = &callPeer{t: t, addr: addr}
		t.callers[addr] = p
	}
	return p
}

// callPeer holds the call connections to one peer.
type callPeer struct {
	t     *Transport
	addr  string
	next  atomic.Uint32 // round-robin slot choice
	slots [callConnsPerPeer]callSlot
}

// callSlot is one connection position in a callPeer: the live connection or
// the dial in progress that will fill it.
type callSlot struct {
	mu      sync.Mutex // lock order: callSlot.mu, then Transport.mu
	conn    *callConn
	pending *dialResult
}

// dialResult is the outcome of one dial, shared by every caller waiting
// for it.
type dialResult struct {
	done    chan struct{}
	started time.Time
	conn    *callConn
	err     error
}

// conn returns a live connection from the next slot, dialing when the slot
// is empty or broken. While that slot dials, another slot's live
// connection serves the call: a dial may hang for the whole dial timeout
// (an address that stopped answering, its peer back elsewhere) while a
// connection made before it still works. The dial runs under the
// transport's lifetime, not ctx, so a caller giving up does not waste a
// connection others wait for.
func (p *callPeer) conn(ctx context.Context) (*callConn, error) {
	start := p.next.Add(1)
	c, d, err := p.slots[start%callConnsPerPeer].connOrDial(p)
	if c != nil || err != nil {
		return c, err
	}
	for i := uint32(1); i < callConnsPerPeer; i++ {
		if c := p.slots[(start+i)%callConnsPerPeer].live(); c != nil {
			return c, nil
		}
	}
	var waited <-chan time.Time
	if w, ok := ctx.Value(dialWaitKey{}).(time.Duration); ok && w > 0 {
		t := time.NewTimer(w)
		defer t.Stop()
		waited = t.C
	}
	select {
	case <-d.done:
		return d.conn, d.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-waited:
		return nil, fmt.Errorf("no connection to %s yet: %w", p.addr, ErrUnreachable)
	}
}

// connOrDial returns the slot's live connection, or the dial that will
// fill it, starting one when none runs or when the one running has gone
// on for timing.redial: a dial to an address that stopped answering hangs
// for the whole dial timeout, while the peer may be back, at that address
// or (its name resolved again) at another. The older dial keeps its
// callers; the first to connect fills the slot.
func (s *callSlot) connOrDial(p *callPeer) (*callConn, *dialResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.conn; c != nil && !c.broken() {
		return c, nil, nil
	}
	if s.pending == nil || time.Since(s.pending.started) >= p.t.tm.redial {
		d := &dialResult{done: make(chan struct{}), started: time.Now()}
		if !p.t.goroutine(func() { p.dial(s, d) }) {
			return nil, nil, ErrClosed
		}
		s.pending = d
	}
	return nil, s.pending, nil
}

// live returns the slot's connection when it has one that works, else nil.
func (s *callSlot) live() *callConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.conn; c != nil && !c.broken() {
		return c
	}
	return nil
}

type dialWaitKey struct{}

// WithDialWait returns a context whose calls (Call) wait at most d for a
// connection to their peer to be made. A call that would wait longer fails
// with ErrUnreachable, and the dial goes on for the calls after it. A
// caller with somewhere else to go uses it: a peer whose address vanished
// (a stopped Kubernetes pod, whose IP no longer answers) takes the whole
// dial timeout to refuse, and a request waiting for it waits as long.
func WithDialWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, dialWaitKey{}, d)
}

// dial fills slot s and publishes the outcome in d.
func (p *callPeer) dial(s *callSlot, d *dialResult) {
	l, err := p.t.dial(p.t.ctx, p.addr, protoCall)
	if err == nil {
		d.conn, err = p.t.newCallConn(l)
	}
	d.err = err
	var extra *callConn
	s.mu.Lock()
	if s.pending == d {
		s.pending = nil
	}
	if err == nil {
		if c := s.conn; c != nil && !c.broken() {
			// A later dial filled the slot first: this one's callers share
			// its connection, and this connection is not kept.
			extra, d.conn = d.conn, c
		} else {
			s.conn = d.conn
		}
	}
	s.mu.Unlock()
	if extra != nil {
		extra.fail(ErrClosed)
	}
	close(d.done)
}

// CallOnce is Call on a connection of its own, closed when the call
// returns. A node about to change its credentials (a joining candidate that
// is given its certificate) uses it so that no pooled connection outlives
// the credentials it was opened with.
func (t *Transport) CallOnce(ctx context.Context, addr, method string, body []byte) ([]byte, error) {
	t.stats.callsSent.Add(1)
	resp, err := t.callOnce(ctx, addr, method, body)
	if err != nil {
		t.stats.callsFailed.Add(1)
		return nil, fmt.Errorf("transport: call %s on %s: %w", method, addr, err)
	}
	return resp, nil
}

func (t *Transport) callOnce(ctx context.Context, addr, method string, body []byte) ([]byte, error) {
	l, err := t.dial(ctx, addr, protoCall)
	if err != nil {
		return nil, err
	}
	c, err := t.newCallConn(l)
	if err != nil {
		return nil, err
	}
	defer c.fail(ErrClosed)
	return c.call(ctx, method, body)
}

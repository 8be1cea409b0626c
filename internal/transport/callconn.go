package transport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// callReply is what a waiting caller receives.
type callReply struct {
	body   []byte
	remote bool  // body is a remote error message
	err    error // connection failure
}

// callConn is the client side of one 'C' connection.
type callConn struct {
	l    *link
	w    *frameWriter
	done chan struct{} // closed when the connection fails; stops the writer

	mu      sync.Mutex
	pending map[uint64]chan callReply
	nextID  uint64
	err     error
}

// newCallConn starts the reader and writer goroutines of a dialed link.
func (t *Transport) newCallConn(l *link) (*callConn, error) {
	c := &callConn{l: l, done: make(chan struct{}), pending: make(map[uint64]chan callReply)}
	c.w = newFrameWriter(l, c.done, appendControl(nil, kindPing), t.tm.keepalive)
	if !t.goroutine(c.w.run) {
		l.close()
		return nil, ErrClosed
	}
	l.readIdle = t.tm.idleRead // pongs answer our pings while idle
	if !t.goroutine(c.readLoop) {
		c.fail(ErrClosed)
		return nil, ErrClosed
	}
	return c, nil
}

// broken reports whether the connection has failed.
func (c *callConn) broken() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// call sends one request and waits for its reply or ctx.
func (c *callConn) call(ctx context.Context, method string, body []byte) ([]byte, error) {
	ch := make(chan callReply, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()

	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Microsecond)
	}
	if err := c.w.enqueue(func(b []byte) []byte { return appendRequest(b, id, timeout, method, body) }); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	select {
	case r := <-ch:
		switch {
		case r.err != nil:
			return nil, r.err
		case r.remote && expired(ctx):
			// The propagated deadline fired remotely as ours fired here
			// (timers on different Ps may fire in either order): report the
			// caller's own context error, not its remote echo.
			return nil, cmp.Or(ctx.Err(), context.DeadlineExceeded)
		case r.remote:
			return nil, &RemoteError{Message: string(r.body)}
		default:
			return r.body, nil
		}
	case <-ctx.Done():
		if c.forget(id) {
			_ = c.w.enqueue(func(b []byte) []byte { return appendReply(b, kindCancel, id, nil) })
		}
		return nil, ctx.Err()
	}
}

// expired reports whether ctx is done or its deadline has passed, even if
// the runtime has not yet fired the deadline's timer.
func expired(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// forget removes a pending call; it reports whether it was still pending.
func (c *callConn) forget(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// readLoop delivers replies to waiting callers until the connection fails.
func (c *callConn) readLoop() {
	for {
		p, err := readFrame(c.l.br, nil, maxCallFrame)
		if err != nil {
			c.fail(err)
			return
		}
		d := decoder{p: p}
		kind := d.byte1()
		if kind == kindPong {
			continue
		}
		id := d.uvarint()
		body := d.rest()
		if d.err == nil && kind != kindOK && kind != kindError {
			d.err = fmt.Errorf("%w: unexpected frame kind %d", errCorrupt, kind)
		}
		if d.err != nil {
			c.fail(d.err)
			return
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- callReply{body: body, remote: kind == kindError}
		}
	}
}

// fail marks the connection broken, closes it and fails every pending call.
func (c *callConn) fail(cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	if !errors.Is(cause, ErrUnreachable) {
		cause = fmt.Errorf("%w: connection to %s: %w", ErrUnreachable, c.l.peerAddr, cause)
	}
	c.err = cause
	pending := c.pending
	c.pending = nil
	close(c.done)
	c.mu.Unlock()
	c.l.close()
	for _, ch := range pending {
		ch <- callReply{err: cause}
	}
}

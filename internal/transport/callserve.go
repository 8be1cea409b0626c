package transport

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// maxConcurrentCalls bounds the requests handled at once per connection.
// When it is reached the connection's read loop waits, which pushes back on
// the caller through TCP flow control.
const maxConcurrentCalls = 1024

// callServer is the server side of one accepted 'C' connection.
type callServer struct {
	t   *Transport
	l   *link
	w   *frameWriter
	sem chan struct{}

	mu       sync.Mutex
	inflight map[uint64]context.CancelFunc
}

// serveCalls reads requests from l and runs each in its own goroutine until
// the connection ends. Requests from a peer isolated by Faults close the
// connection, which callers observe as ErrUnreachable.
func (t *Transport) serveCalls(l *link) {
	stop := make(chan struct{})
	s := &callServer{
		t:        t,
		l:        l,
		w:        newFrameWriter(l, stop, nil, 0),
		sem:      make(chan struct{}, maxConcurrentCalls),
		inflight: make(map[uint64]context.CancelFunc),
	}
	if !t.goroutine(s.w.run) {
		return
	}
	defer s.cancelAll()
	defer close(stop)
	for {
		p, err := readFrame(l.br, nil, maxCallFrame)
		if err != nil {
			t.logStreamEnd("call", l, err)
			return
		}
		if t.faults.isolated(l.peerAddr, l.peerID) {
			return
		}
		if err := s.dispatch(p); err != nil {
			t.log.Warn("transport: bad call frame", "peer", l.peerID, "err", err)
			return
		}
	}
}

// dispatch handles one frame from the caller.
func (s *callServer) dispatch(p []byte) error {
	d := decoder{p: p}
	switch kind := d.byte1(); kind {
	case kindPing:
		_ = s.w.enqueue(func(b []byte) []byte { return appendControl(b, kindPong) })
		return nil
	case kindCancel:
		id := d.uvarint()
		s.mu.Lock()
		cancel := s.inflight[id]
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return d.err
	case kindRequest:
		id := d.uvarint()
		timeout := time.Duration(d.uvarint()) * time.Microsecond
		method := string(d.bytes())
		body := d.rest()
		if d.err != nil {
			return d.err
		}
		s.start(id, timeout, method, body)
		return nil
	default:
		if d.err != nil {
			return d.err
		}
		return fmt.Errorf("%w: unexpected frame kind %d", errCorrupt, kind)
	}
}

// start runs one request in its own goroutine once a semaphore slot is free.
func (s *callServer) start(id uint64, timeout time.Duration, method string, body []byte) {
	t := s.t
	select {
	case s.sem <- struct{}{}:
	case <-t.ctx.Done():
		return
	}
	var (
		ctx    context.Context
		cancel context.CancelFunc
	)
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(t.ctx, timeout)
	} else {
		ctx, cancel = context.WithCancel(t.ctx)
	}
	s.mu.Lock()
	s.inflight[id] = cancel
	s.mu.Unlock()
	ok := t.goroutine(func() {
		defer func() { <-s.sem }()
		s.handle(ctx, id, method, body)
	})
	if !ok {
		s.finish(id)
		<-s.sem
	}
}

// handle calls the Handler and queues the reply.
func (s *callServer) handle(ctx context.Context, id uint64, method string, body []byte) {
	resp, err := s.t.h.HandleCall(ctx, s.l.peerID, method, body)
	s.finish(id)
	if s.t.ctx.Err() != nil {
		return // closing: the caller sees the connection end instead
	}
	s.t.stats.callsServed.Add(1)
	kind := byte(kindOK)
	if err == nil && 1+uvarintLen(id)+len(resp) > maxCallFrame {
		err = fmt.Errorf("transport: response of %d bytes exceeds the %d byte frame limit", len(resp), maxCallFrame)
	}
	if err != nil {
		kind, resp = kindError, []byte(err.Error())
	}
	_ = s.w.enqueue(func(b []byte) []byte { return appendReply(b, kind, id, resp) })
}

// finish forgets a request and releases its context.
func (s *callServer) finish(id uint64) {
	s.mu.Lock()
	cancel := s.inflight[id]
	delete(s.inflight, id)
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// cancelAll cancels every request still running when the connection ends.
func (s *callServer) cancelAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, cancel := range s.inflight {
		cancel()
		delete(s.inflight, id)
	}
}

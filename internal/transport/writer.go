package transport

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// maxWriteBacklog bounds the bytes waiting in a frameWriter; enqueue fails
// beyond it rather than letting a stalled peer grow memory without limit.
const maxWriteBacklog = 64 << 20

// errBacklog is returned by frameWriter.enqueue when the backlog is full.
var errBacklog = errors.New("write backlog full")

// frameWriter lets many goroutines write frames to one connection. Frames
// are appended to a shared buffer and written by one goroutine (run), so
// frames queued while a write is in progress go out together in the next
// single write. Optionally it writes a keepalive frame at a fixed interval.
type frameWriter struct {
	l         *link
	ping      []byte        // keepalive frame; nil disables keepalives
	keepalive time.Duration // interval between pings
	stop      <-chan struct{}
	kick      chan struct{}

	mu  sync.Mutex
	buf []byte
	err error // sticky: set when run exits
}

// newFrameWriter returns a writer for l that stops when stop is closed.
func newFrameWriter(l *link, stop <-chan struct{}, ping []byte, keepalive time.Duration) *frameWriter {
	return &frameWriter{l: l, stop: stop, ping: ping, keepalive: keepalive, kick: make(chan struct{}, 1)}
}

// enqueue appends a frame built by fn to the backlog. fn must only append
// to its argument and return the result.
func (w *frameWriter) enqueue(fn func([]byte) []byte) error {
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	if len(w.buf) > maxWriteBacklog {
		w.mu.Unlock()
		return errBacklog
	}
	w.buf = fn(w.buf)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	return nil
}

// run writes the backlog until stop is closed or a write fails; a failed
// write closes the connection so its reader notices too.
func (w *frameWriter) run() {
	var spare []byte
	var tick <-chan time.Time
	if w.ping != nil {
		ticker := time.NewTicker(w.keepalive)
		defer ticker.Stop()
		tick = ticker.C
	}
	for {
		select {
		case <-w.kick:
		case <-tick:
			// Ping on every tick, busy or not: what keeps the connection
			// alive is the peer's pong, and a busy writer says nothing about
			// whether anything comes back.
			_ = w.enqueue(func(b []byte) []byte { return append(b, w.ping...) })
			continue
		case <-w.stop:
			w.fail(ErrClosed)
			return
		}
		w.mu.Lock()
		b := w.buf
		w.buf = spare[:0]
		w.mu.Unlock()
		if len(b) == 0 {
			spare = b
			continue
		}
		if err := w.l.writeFull(b); err != nil {
			w.fail(fmt.Errorf("%w: write: %w", ErrUnreachable, err))
			w.l.close()
			return
		}
		spare = b[:0]
		if cap(spare) > maxRetainedBuffer {
			spare = nil
		}
	}
}

// fail makes later enqueues fail with err.
func (w *frameWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
	w.buf = nil
}

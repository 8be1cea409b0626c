package stream

import (
	"context"
	"errors"
	"sync"
)

// Queue bounds of a Subscriber (Config.MaxFrames, Config.MaxBytes).
const (
	DefaultMaxFrames = 1024
	DefaultMaxBytes  = 8 << 20
)

// ErrSlowConsumer is what Subscriber.Next returns once the subscriber's
// queue overflowed: its connection must send the slow_consumer error and
// close (the client resumes from the last seq it saw).
var ErrSlowConsumer = errors.New("stream: slow consumer")

// ErrClosed is what Subscriber.Next returns once the subscriber was
// disconnected or the Hub closed (the node is shutting down).
var ErrClosed = errors.New("stream: closed")

// ErrSessionEnded is the cause with which a Guard ends the subscribers of a
// session that ended (signed out, revoked, expired): their connections must
// send the unauthorized error frame and close with CloseUnauthorized.
var ErrSessionEnded = errors.New("stream: session ended")

// Subscriber is one connection's outbound side: a bounded queue of encoded
// frames that the Hub fills without ever blocking and the connection's
// writer drains with Next. Create it with Hub.Connect.
type Subscriber struct {
	user      string
	maxFrames int
	maxBytes  int

	// rooms holds the subscriber's subscriptions by room; guarded by Hub.mu.
	rooms map[string]*sub

	mu       sync.Mutex
	queue    [][]byte
	bytes    int
	overflow bool
	closed   bool
	ended    error         // End's cause
	wake     chan struct{} // capacity 1: something to do
	done     chan struct{} // closed with closed
}

func newSubscriber(user string, maxFrames, maxBytes int) *Subscriber {
	return &Subscriber{
		user:      user,
		maxFrames: maxFrames,
		maxBytes:  maxBytes,
		rooms:     map[string]*sub{},
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
}

// User returns the signed-in user the subscriber receives events for.
func (s *Subscriber) User() string { return s.user }

// Done is closed once the subscriber is disconnected or the Hub closed.
func (s *Subscriber) Done() <-chan struct{} { return s.done }

// Send queues a frame for the connection (the api layer's own replies,
// presence). It reports false when the frame was not queued: the queue
// overflowed (the subscriber is now slow) or the subscriber is closed.
func (s *Subscriber) Send(frame []byte) bool { return s.enqueue(frame) }

// End ends the subscriber for cause (ErrSessionEnded): the frames still
// queued are dropped, no frame is queued any more, and Next returns cause
// from now on, ahead of any other error. It may be called at any time, from
// any goroutine, more than once (the first cause stays) and after the
// subscriber closed. The subscriber keeps its subscriptions until
// Hub.Disconnect.
func (s *Subscriber) End(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended != nil {
		return
	}
	s.ended = cause
	s.queue, s.bytes = nil, 0
	s.signal()
}

// Ended returns End's cause, nil while the subscriber was not ended. A
// connection's writer checks it between frames so that nothing is written
// once the end is known.
func (s *Subscriber) Ended() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// enqueue appends frame unless the subscriber is closed, ended or slow;
// past the bounds it marks the subscriber slow and drops its queue.
func (s *Subscriber) enqueue(frame []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.overflow || s.ended != nil {
		return false
	}
	if len(s.queue) >= s.maxFrames || s.bytes+len(frame) > s.maxBytes {
		s.overflow = true
		s.queue, s.bytes = nil, 0
		s.signal()
		return false
	}
	s.queue = append(s.queue, frame)
	s.bytes += len(frame)
	if len(s.queue) == 1 {
		s.signal()
	}
	return true
}

// resync drops the queue and makes Next return ErrSlowConsumer, so the
// connection sends slow_consumer and closes and its client resumes every
// room through a new subscribe check. It reports whether the subscriber
// was not already slow, ended or closed.
func (s *Subscriber) resync() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.overflow || s.ended != nil {
		return false
	}
	s.overflow = true
	s.queue, s.bytes = nil, 0
	s.signal()
	return true
}

// signal wakes Next. s.mu must be held.
func (s *Subscriber) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Next waits for queued frames and returns them all, in order, appended to
// buf[:0]. It returns End's cause once the subscriber was ended,
// ErrSlowConsumer once the queue overflowed, ErrClosed once the subscriber
// is closed (frames still queued are dropped), and ctx's error when ctx
// ends first.
func (s *Subscriber) Next(ctx context.Context, buf [][]byte) ([][]byte, error) {
	for {
		s.mu.Lock()
		switch {
		case s.ended != nil:
			err := s.ended
			s.mu.Unlock()
			return buf[:0], err
		case s.overflow:
			s.mu.Unlock()
			return buf[:0], ErrSlowConsumer
		case s.closed:
			s.mu.Unlock()
			return buf[:0], ErrClosed
		case len(s.queue) > 0:
			out := append(buf[:0], s.queue...)
			clear(s.queue)
			s.queue, s.bytes = s.queue[:0], 0
			s.mu.Unlock()
			return out, nil
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return buf[:0], ctx.Err()
		}
	}
}

// close marks the subscriber closed and wakes Next.
func (s *Subscriber) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.queue, s.bytes = nil, 0
	close(s.done)
	s.signal()
}

// slow reports whether the subscriber overflowed.
func (s *Subscriber) slow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overflow
}

package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Transport is a node's single endpoint for node-to-node traffic. Create it
// with New; it listens immediately and serves until Close.
type Transport struct {
	cfg    Config
	h      Handler
	ln     net.Listener
	log    *slog.Logger
	tm     timing
	faults Faults
	stats  counters

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the transport starts

	mu      sync.RWMutex
	closed  bool
	conns   map[net.Conn]string    // every live connection, both directions, with its peer's node id once known
	senders map[string]*raftSender // Raft senders by peer address
	callers map[string]*callPeer   // call connection pools by peer address
}

// New validates cfg, starts listening on cfg.ListenAddr and starts serving
// incoming connections with h. The caller must call Close.
func New(cfg Config, h Handler) (*Transport, error) {
	return newTransport(cfg, h, defaultTiming())
}

// newTransport is New with explicit timing, for tests.
func newTransport(cfg Config, h Handler, tm timing) (*Transport, error) {
	if h == nil {
		return nil, errors.New("transport: nil Handler")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	t := &Transport{
		cfg:     cfg,
		h:       h,
		log:     cfg.Logger,
		tm:      tm,
		conns:   make(map[net.Conn]string),
		senders: make(map[string]*raftSender),
		callers: make(map[string]*callPeer),
	}
	lc := net.ListenConfig{KeepAliveConfig: t.keepAliveConfig()}
	ln, err := lc.Listen(context.Background(), "tcp", cfg.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen on %s: %w", cfg.ListenAddr, err)
	}
	t.ln = ln
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.goroutine(t.acceptLoop)
	return t, nil
}

// Addr returns the actual listen address, useful with port 0.
func (t *Transport) Addr() string { return t.ln.Addr().String() }

// Faults returns the transport's fault injection controls.
func (t *Transport) Faults() *Faults { return &t.faults }

// Stats returns a snapshot of the transport's counters.
func (t *Transport) Stats() Stats { return t.stats.snapshot() }

// Close stops the listener, closes every connection, fails calls in flight
// and waits for every goroutine the transport started. Later sends are
// dropped and later calls fail with ErrClosed. Close is idempotent.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	conns := t.conns
	t.conns = nil
	t.mu.Unlock()

	// Connections close before the context is cancelled, so handlers
	// returning because of the cancellation cannot answer: their callers
	// see the peer go away (ErrUnreachable), not a remote "context canceled".
	err := t.ln.Close()
	for c := range conns {
		_ = c.Close()
	}
	t.cancel()
	t.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("transport: close listener: %w", err)
	}
	return nil
}

// advertiseAddr is the listen address sent in handshakes.
func (t *Transport) advertiseAddr() string {
	if t.cfg.AdvertiseAddr != "" {
		return t.cfg.AdvertiseAddr
	}
	return t.Addr()
}

// goroutine starts fn as a goroutine owned by the transport, unless the
// transport is closed. It reports whether fn was started.
func (t *Transport) goroutine(fn func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		fn()
	}()
	return true
}

// track registers a connection so Close can close it. It reports false when
// the transport is closed; the caller then closes c itself.
func (t *Transport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[c] = ""
	return true
}

// setPeer records the node id of a tracked connection's peer.
func (t *Transport) setPeer(c net.Conn, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.conns[c]; ok {
		t.conns[c] = id
	}
}

// DropPeer closes every connection to and from node id, both directions: a
// node whose certificate was revoked keeps no connection it had. Later
// handshakes are refused by the TLS configuration.
func (t *Transport) DropPeer(id string) {
	if id == "" {
		return
	}
	t.mu.Lock()
	var drop []net.Conn
	for c, p := range t.conns {
		if p == id {
			drop = append(drop, c)
		}
	}
	t.mu.Unlock()
	for _, c := range drop {
		_ = c.Close()
	}
}

// untrack forgets a connection.
func (t *Transport) untrack(c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.conns, c)
}

// acceptLoop accepts connections until the listener closes.
func (t *Transport) acceptLoop() {
	var backoff time.Duration
	for {
		c, err := t.ln.Accept()
		if err != nil {
			if t.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Resource exhaustion (EMFILE and the like): back off, retry.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t.log.Warn("transport: accept failed", "err", err, "retry_in", backoff)
			if !sleepCtx(t.ctx, backoff) {
				return
			}
			continue
		}
		backoff = 0
		if !t.goroutine(func() { t.serveConn(c) }) {
			_ = c.Close()
			return
		}
	}
}

// sleepCtx sleeps for d or until ctx is done; it reports whether the full
// duration elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

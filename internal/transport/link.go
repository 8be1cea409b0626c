package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// link is one connection past its handshake.
type link struct {
	net.Conn               // outermost connection: TLS or counting TCP
	br       *bufio.Reader // buffered reader over Conn
	raw      net.Conn      // tracked TCP connection; closing it unblocks all I/O
	t        *Transport
	peerID   string // peer node id, from the handshake or its acknowledgement
	peerAddr string // peer listen address (dialed address on the dialing side)

	// readIdle, when positive, is the longest a read may wait for the next
	// byte: every read from the connection through br pushes the read
	// deadline this far out. Set it before the first read past the handshake.
	readIdle time.Duration
}

// newReader sets up l.br over l.Conn with the given buffer size.
func (l *link) newReader(size int) {
	l.br = bufio.NewReaderSize(idleReader{l}, size)
}

// idleReader reads from a link's connection, extending the read deadline
// before each read so that only silence, not a long frame, times out.
type idleReader struct{ l *link }

// Read implements io.Reader.
func (r idleReader) Read(p []byte) (int, error) {
	if r.l.readIdle > 0 {
		_ = r.l.SetReadDeadline(time.Now().Add(r.l.readIdle))
	}
	return r.l.Conn.Read(p)
}

// close closes the connection and forgets it. It is idempotent.
func (l *link) close() {
	l.t.untrack(l.raw)
	_ = l.raw.Close()
}

// writeFull writes b with the transport's write timeout.
func (l *link) writeFull(b []byte) error {
	_ = l.SetWriteDeadline(time.Now().Add(l.t.tm.write))
	_, err := l.Write(b)
	return err
}

// dial connects to addr, runs the TLS and protocol handshakes for proto and
// returns the established link. ctx bounds the whole exchange together with
// the transport's dial timeout. Failures wrap ErrUnreachable, refusals for
// cluster id reasons wrap ErrClusterMismatch.
func (t *Transport) dial(ctx context.Context, addr string, proto byte) (*link, error) {
	if t.faults.isolated(addr) {
		return nil, fmt.Errorf("dial %s: isolated by fault injection: %w", addr, ErrUnreachable)
	}
	ctx, cancel := context.WithTimeout(ctx, t.tm.dial)
	defer cancel()
	if t.faults.dialCut(addr) {
		<-ctx.Done() // an address nothing answers at: no refusal comes
		return nil, fmt.Errorf("dial %s: no answer (fault injection): %w: %w", addr, ErrUnreachable, ctx.Err())
	}
	d := net.Dialer{KeepAliveConfig: t.keepAliveConfig()}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w: %w", addr, ErrUnreachable, err)
	}
	if tcp, ok := raw.(*net.TCPConn); ok {
		_ = tcp.SetNoDelay(true)
	}
	cc := countingConn{Conn: raw, c: &t.stats}
	if !t.track(cc) {
		_ = raw.Close()
		return nil, fmt.Errorf("dial %s: %w", addr, ErrClosed)
	}
	l := &link{Conn: cc, raw: cc, t: t, peerAddr: addr}
	if err := t.clientHandshake(ctx, l, proto); err != nil {
		l.close()
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return l, nil
}

// clientHandshake runs TLS, sends the protocol byte and hello, and reads the
// acknowledgement.
func (t *Transport) clientHandshake(ctx context.Context, l *link, proto byte) error {
	deadline, _ := ctx.Deadline()
	_ = l.raw.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = l.raw.SetDeadline(time.Now()) })
	defer stop()
	if t.cfg.TLS != nil {
		tc := tls.Client(l.Conn, t.clientTLS(l.peerAddr))
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("%w: tls: %w", ErrUnreachable, err)
		}
		l.Conn = tc
	}
	buf := append(make([]byte, 0, 128), proto)
	h := ourHello(t.cfg.NodeID, t.advertiseAddr(), t.cfg.ClusterID())
	if t.cfg.Boot != nil {
		h.boot = t.cfg.Boot()
	}
	buf = appendHello(buf, h)
	if _, err := l.Write(buf); err != nil {
		return fmt.Errorf("%w: send handshake: %w", ErrUnreachable, err)
	}
	l.newReader(readBufferSize(proto))
	p, err := readFrame(l.br, nil, maxHandshakeFrame)
	if err != nil {
		return fmt.Errorf("%w: read handshake reply: %w", ErrUnreachable, err)
	}
	if len(p) == 0 {
		return fmt.Errorf("%w: empty handshake reply", ErrUnreachable)
	}
	switch status, reason := p[0], string(p[1:]); status {
	case ackOK:
		l.peerID = reason
		t.setPeer(l.raw, l.peerID)
		if t.faults.isolated(l.peerID) {
			return fmt.Errorf("%w: peer %s isolated by fault injection", ErrUnreachable, l.peerID)
		}
	case ackMismatch:
		return fmt.Errorf("%w: %s", ErrClusterMismatch, reason)
	case ackStale:
		if t.cfg.OnStale != nil {
			t.cfg.OnStale(reason)
		}
		return fmt.Errorf("%w: %s", ErrStaleData, reason)
	default:
		return fmt.Errorf("%w: refused: %s", ErrUnreachable, reason)
	}
	if !stop() {
		return fmt.Errorf("%w: %w", ErrUnreachable, context.Cause(ctx))
	}
	_ = l.raw.SetDeadline(time.Time{})
	return nil
}

// clientTLS returns the TLS configuration for dialing addr.
func (t *Transport) clientTLS(addr string) *tls.Config {
	cfg := t.cfg.TLS.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	return cfg
}

// tlsServer wraps an accepted connection in TLS.
func tlsServer(c net.Conn, cfg *tls.Config) *tls.Conn {
	return tls.Server(c, cfg)
}

// keepAliveConfig returns the TCP keepalive settings for every connection.
func (t *Transport) keepAliveConfig() net.KeepAliveConfig {
	return net.KeepAliveConfig{Enable: true, Idle: t.tm.tcpIdle, Interval: t.tm.tcpIdle / 3, Count: 3}
}

package transport

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/parley-chat/parley/internal/compat"
	"io"
	"net"
	"strings"
	"time"
)

// helloMagic starts every handshake.
const helloMagic = "PRLY"

// Acknowledgement status bytes, the first byte of the receiver's reply to a
// handshake.
const (
	ackOK       byte = 0 // followed by the receiver's node id
	ackMismatch byte = 1 // cluster ids differ or are missing: ErrClusterMismatch
	ackRefused  byte = 2 // isolated, unsupported version or protocol: ErrUnreachable
	ackStale    byte = 3 // the sender's data went back in time: ErrStaleData
)

// hello is the handshake a dialer sends after the protocol byte. minVersion
// is the oldest protocol the sender speaks, in the one version byte every
// build sends, and maxVersion the newest, after the fields every build
// sends. Builds from before the range leave maxVersion out (decoded as
// minVersion), ignore it when they receive it, as they ignore any trailing
// bytes, and accept only their own version in that byte: a build that
// still speaks their protocol is let in.
type hello struct {
	minVersion byte
	nodeID     string
	addr       string // the sender's advertised listen address
	clusterID  string
	maxVersion byte
	boot       Boot // zero from builds that do not send it
}

// ourHello is this build's handshake, with its protocol range.
func ourHello(nodeID, addr, clusterID string) hello {
	return hello{minVersion: compat.MinProtocol, maxVersion: compat.Protocol, nodeID: nodeID, addr: addr, clusterID: clusterID}
}

// appendHello appends the handshake frame (header included).
func appendHello(dst []byte, h hello) []byte {
	start := len(dst)
	dst = appendFrameHeader(dst, 0)
	dst = append(dst, helloMagic...)
	dst = append(dst, h.minVersion)
	dst = appendString(dst, h.nodeID)
	dst = appendString(dst, h.addr)
	dst = appendString(dst, h.clusterID)
	dst = append(dst, h.maxVersion)
	dst = appendString(dst, h.boot.Incarnation)
	dst = binary.AppendUvarint(dst, h.boot.Generation)
	dst = appendString(dst, h.boot.ID)
	putFrameHeader(dst[start:], len(dst)-start-frameHeaderLen)
	return dst
}

// decodeHello decodes a handshake payload.
func decodeHello(p []byte) (hello, error) {
	if !bytes.HasPrefix(p, []byte(helloMagic)) {
		return hello{}, fmt.Errorf("%w: bad handshake magic", errCorrupt)
	}
	d := decoder{p: p[len(helloMagic):]}
	h := hello{minVersion: d.byte1()}
	h.nodeID = string(d.bytes())
	h.addr = string(d.bytes())
	h.clusterID = string(d.bytes())
	if d.err != nil {
		return hello{}, d.err
	}
	h.maxVersion = h.minVersion
	if len(d.p) > 0 {
		h.maxVersion = d.byte1()
	}
	if len(d.p) > 0 {
		h.boot.Incarnation = string(d.bytes())
		h.boot.Generation = d.uvarint()
		h.boot.ID = string(d.bytes())
	}
	if d.err != nil {
		return hello{}, d.err
	}
	return h, nil
}

// appendAck appends an acknowledgement frame.
func appendAck(dst []byte, status byte, msg string) []byte {
	dst = appendFrameHeader(dst, 1+len(msg))
	dst = append(dst, status)
	return append(dst, msg...)
}

// peer is who an accepted connection comes from, as far as TLS proved it.
type peer struct {
	verified  bool   // Identify ran: id is what the certificate names
	candidate bool   // no certificate: may only call (join)
	id        string // the certificate's node id when verified
}

// admit decides whether to accept a connection of protocol proto from the
// sender described by h and proven by p. It returns a status byte and, for
// refusals, a one-line reason.
func (t *Transport) admit(proto byte, h hello, p peer) (byte, string) {
	switch {
	case p.candidate && proto != protoCall:
		return ackRefused, "a node without a cluster certificate may only ask to join"
	case p.candidate && h.nodeID == "":
		return ackRefused, "a joining node must name itself"
	case p.verified && !p.candidate && h.nodeID != p.id:
		return ackRefused, fmt.Sprintf("certificate names node %q, the handshake claims %q", p.id, h.nodeID)
	}
	if !compat.Compatible(int(h.minVersion), int(h.maxVersion)) {
		return ackRefused, fmt.Sprintf("node %s speaks protocol versions %d to %d, node %s speaks %d to %d: upgrade one release at a time (docs/UPGRADE.md)",
			h.nodeID, h.minVersion, h.maxVersion, t.cfg.NodeID, compat.MinProtocol, compat.Protocol)
	}
	if t.faults.isolated(h.addr, h.nodeID) {
		return ackRefused, "isolated by fault injection"
	}
	if t.cfg.CheckBoot != nil && !p.candidate && h.boot.Incarnation != "" {
		if err := t.cfg.CheckBoot(h.nodeID, h.boot); err != nil {
			return ackStale, err.Error()
		}
	}
	local := t.cfg.ClusterID()
	switch proto {
	case protoCall:
		if local != "" && h.clusterID != "" && local != h.clusterID {
			return ackMismatch, fmt.Sprintf("receiver %s has %q, sender %s has %q", t.cfg.NodeID, local, h.nodeID, h.clusterID)
		}
	case protoRaft, protoSnapshot:
		if local == "" || h.clusterID == "" || local != h.clusterID {
			return ackMismatch, fmt.Sprintf("raft and snapshot streams need equal non-empty cluster ids: receiver %s has %q, sender %s has %q",
				t.cfg.NodeID, local, h.nodeID, h.clusterID)
		}
	default:
		return ackRefused, fmt.Sprintf("unknown protocol %q", proto)
	}
	return ackOK, ""
}

// serveConn runs the server side of one accepted connection: TLS, protocol
// byte, handshake, then the protocol's serve loop. It owns the connection and
// closes it on return.
func (t *Transport) serveConn(raw net.Conn) {
	if tcp, ok := raw.(*net.TCPConn); ok {
		_ = tcp.SetNoDelay(true)
	}
	cc := countingConn{Conn: raw, c: &t.stats}
	if !t.track(cc) {
		_ = raw.Close()
		return
	}
	l := &link{Conn: cc, raw: cc, t: t, peerAddr: raw.RemoteAddr().String()}
	defer l.close()
	_ = cc.SetDeadline(time.Now().Add(t.tm.dial))
	proto, h, err := t.acceptHandshake(l)
	if err != nil {
		t.log.Debug("transport: handshake failed", "remote", l.peerAddr, "err", err)
		if errors.Is(err, errTLSRefused) {
			t.refused(Refusal{Remote: l.peerAddr, Reason: err.Error()})
		}
		return
	}
	p := t.identify(l)
	status, reason := t.admit(proto, h, p)
	if status == ackOK {
		reason = t.cfg.NodeID // an acceptance carries the receiver's node id
	}
	if _, err := l.Write(appendAck(nil, status, reason)); err != nil || status != ackOK {
		t.log.Debug("transport: connection refused", "remote", l.peerAddr, "peer", h.nodeID, "reason", reason, "err", err)
		if status != ackOK && !strings.HasPrefix(reason, "isolated") {
			t.refused(Refusal{Remote: l.peerAddr, Claimed: h.nodeID, Reason: reason})
		}
		return
	}
	_ = cc.SetDeadline(time.Time{})
	l.peerID, l.peerAddr = h.nodeID, h.addr
	if p.candidate {
		l.peerID = "" // the Handler sees a candidate as nobody
	}
	t.setPeer(cc, l.peerID)
	l.readIdle = t.tm.idleRead // every protocol's sender writes at least every keepalive
	switch proto {
	case protoRaft:
		t.serveRaft(l)
	case protoCall:
		t.serveCalls(l)
	case protoSnapshot:
		t.serveSnapshot(l)
	}
}

// errTLSRefused marks a failed TLS handshake of an accepted connection: a
// peer without a valid certificate of the cluster, or not speaking TLS.
var errTLSRefused = errors.New("tls handshake refused")

// identify names the peer of an accepted connection from its TLS state.
func (t *Transport) identify(l *link) peer {
	tc, ok := l.Conn.(*tls.Conn)
	if !ok || t.cfg.Identify == nil {
		return peer{}
	}
	id, named := t.cfg.Identify(tc.ConnectionState())
	return peer{verified: true, candidate: !named, id: id}
}

// refused reports a refused connection to Config.OnRefused.
func (t *Transport) refused(r Refusal) {
	if t.cfg.OnRefused != nil {
		t.cfg.OnRefused(r)
	}
}

// acceptHandshake performs the TLS handshake (when configured), reads the
// protocol byte and the hello frame, and sets up l's buffered reader.
func (t *Transport) acceptHandshake(l *link) (byte, hello, error) {
	if t.cfg.TLS != nil {
		tc := tlsServer(l.Conn, t.cfg.TLS)
		if err := tc.HandshakeContext(t.ctx); err != nil {
			return 0, hello{}, fmt.Errorf("%w: %w", errTLSRefused, err)
		}
		l.Conn = tc
	}
	var pb [1]byte
	if _, err := io.ReadFull(l.Conn, pb[:]); err != nil {
		return 0, hello{}, fmt.Errorf("read protocol byte: %w", err)
	}
	l.newReader(readBufferSize(pb[0]))
	p, err := readFrame(l.br, nil, maxHandshakeFrame)
	if err != nil {
		return 0, hello{}, fmt.Errorf("read handshake: %w", err)
	}
	h, err := decodeHello(p)
	if err != nil {
		return 0, hello{}, fmt.Errorf("decode handshake: %w", err)
	}
	return pb[0], h, nil
}

// readBufferSize returns the reader buffer size for a protocol.
func readBufferSize(proto byte) int {
	switch proto {
	case protoRaft:
		return raftReadBuffer
	case protoSnapshot:
		return snapReadBuffer
	default:
		return callReadBuffer
	}
}

package transport

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"time"
)

// DefaultMaxQueuedMessages is the per-peer Raft queue bound used when
// Config.MaxQueuedMessages is zero.
const DefaultMaxQueuedMessages = 4096

// Config configures a Transport. ListenAddr and NodeID are required; every
// other field has a usable zero value.
type Config struct {
	// ListenAddr is the TCP address to listen on, e.g. "127.0.0.1:0".
	ListenAddr string

	// AdvertiseAddr is the address peers use to reach this node. It is sent
	// in the handshake so a receiver can apply Faults by address. When empty,
	// the actual listen address (Addr) is sent.
	AdvertiseAddr string

	// TLS, when set, is used for both listening and dialing. For mutual TLS
	// the caller sets Certificates, RootCAs, ClientCAs and
	// ClientAuth=tls.RequireAndVerifyClientCert; a peer whose certificate does
	// not verify is refused. When ServerName is empty, the host of the dialed
	// address is used.
	TLS *tls.Config

	// ClusterID returns the current cluster id, "" while the node has not
	// joined a cluster. It is called once per handshake. Nil means always "".
	ClusterID func() string

	// NodeID is this node's id, sent in the handshake and passed as "from"
	// to the peer's Handler.
	NodeID string

	// Logger receives connection-level events. Nil discards them.
	Logger *slog.Logger

	// Identify, when set together with TLS, names the peer of an accepted
	// connection from its verified certificate. A named peer's hello must
	// claim that node id (a node cannot speak for another). A peer that
	// presented no certificate (ok false) is a joining candidate: it may
	// open call connections only, and its calls reach the Handler with from
	// "" so the Handler can refuse everything but joining. Nil trusts the
	// hello's node id (the operator's own PKI, or no TLS).
	Identify func(cs tls.ConnectionState) (nodeID string, ok bool)

	// OnRefused, when set, is told of every incoming connection refused at
	// the TLS or protocol handshake (the audit log). It must not block.
	OnRefused func(Refusal)

	// Boot, when set, returns this node's boot identity, sent in every
	// handshake it dials (called once per handshake).
	Boot func() Boot

	// CheckBoot, when set, judges the boot identity of every peer that
	// dials in with one (not joining candidates, not builds that send
	// none): an error refuses the connection as stale, and its text is
	// the reason the peer is given. It must be quick and safe for
	// concurrent use.
	CheckBoot func(nodeID string, b Boot) error

	// OnStale, when set, is told when a peer refused this node as stale,
	// with the peer's reason. It must not block.
	OnStale func(reason string)

	// MaxQueuedMessages bounds each peer's Raft send queue. Messages beyond
	// it are dropped (Raft retransmits) and counted in Stats.RaftDropped.
	// Zero means DefaultMaxQueuedMessages.
	MaxQueuedMessages int
}

// Boot says which run of which data directory a node is: a node that
// starts from an old copy of its data directory repeats a Generation with
// another ID, or goes back to an older one, which its peers can tell.
type Boot struct {
	// Incarnation is the data directory's: random, made when the node
	// first joined a cluster with it.
	Incarnation string
	// Generation counts the starts of the data directory, stored in it
	// before the node talks to anyone.
	Generation uint64
	// ID is random for each start.
	ID string
}

// Refusal describes an incoming connection the transport refused.
type Refusal struct {
	// Remote is the TCP address it came from.
	Remote string
	// Claimed is the node id its hello claimed ("" before the hello).
	Claimed string
	// Reason says why, in one line.
	Reason string
}

// validate reports the first problem with c.
func (c *Config) validate() error {
	switch {
	case c.ListenAddr == "":
		return errors.New("transport: Config.ListenAddr is required")
	case c.NodeID == "":
		return errors.New("transport: Config.NodeID is required")
	case c.MaxQueuedMessages < 0:
		return errors.New("transport: Config.MaxQueuedMessages must not be negative")
	}
	return nil
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.ClusterID == nil {
		c.ClusterID = func() string { return "" }
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxQueuedMessages == 0 {
		c.MaxQueuedMessages = DefaultMaxQueuedMessages
	}
	return c
}

// timing holds the timeouts and intervals of a Transport. They are not part
// of Config because no caller has needed to change them; tests in this
// package shorten them.
type timing struct {
	dial       time.Duration // TCP connect plus TLS and protocol handshake
	redial     time.Duration // a call dial pending this long is joined by a fresh one
	write      time.Duration // one write of a frame or batch
	keepalive  time.Duration // idle interval after which a keepalive frame is sent
	idleRead   time.Duration // a stream silent this long is considered dead
	tcpIdle    time.Duration // TCP keepalive idle time
	backoffMin time.Duration // first redial delay of a Raft sender
	backoffMax time.Duration // largest redial delay of a Raft sender
	senderIdle time.Duration // a Raft sender with nothing to send this long exits
	snapChunk  int           // snapshot chunk size in bytes
}

// defaultTiming returns the production timing.
func defaultTiming() timing {
	return timing{
		dial:       5 * time.Second,
		redial:     time.Second,
		write:      10 * time.Second,
		keepalive:  2 * time.Second,
		idleRead:   10 * time.Second,
		tcpIdle:    15 * time.Second,
		backoffMin: 20 * time.Millisecond,
		backoffMax: time.Second,
		senderIdle: time.Minute,
		snapChunk:  1 << 20,
	}
}

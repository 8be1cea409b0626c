// Package membership finds the cluster's nodes and watches their health with
// hashicorp/memberlist (SWIM gossip). Each node gossips a small Meta (id,
// addresses, zone, standby) and sees every other node as alive, suspect,
// dead or left. Gossip only informs: the cluster map, and with it every
// replica-set change, is decided through Raft by the placement controller,
// which reads this package's view.
//
// Nodes of another cluster are refused: the cluster id travels in the
// gossiped metadata and both the merge delegate (joins and push/pull) and the
// alive delegate (gossiped alive messages) reject a mismatch.
//
// Memberlist reports joins, departures and metadata updates but has no
// suspicion event; a node learns that a peer is suspect when its own probe of
// that peer fails (memberlist logs it, and the log line is read here). Other
// nodes keep seeing the peer alive until it is declared dead or refutes.
package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// State is what gossip says about a member.
type State uint8

// Member states. Left is a member that said goodbye (Leave); Dead one that
// stopped answering.
const (
	Alive State = iota
	Suspect
	Dead
	Left
)

func (s State) String() string {
	switch s {
	case Alive:
		return "alive"
	case Suspect:
		return "suspect"
	case Dead:
		return "dead"
	case Left:
		return "left"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// MaxMetaSize is the largest encoded metadata memberlist carries.
const MaxMetaSize = memberlist.MetaMaxSize

// Meta is what a node tells the others about itself.
type Meta struct {
	ID          string `json:"id"`
	ClusterAddr string `json:"cluster_addr,omitempty"`
	HTTPAddr    string `json:"http_addr,omitempty"`
	// LinksAddr is the member's advertised links listener (--links),
	// where every path is a short link; "" when it has none (or runs a
	// build from before it was gossiped).
	LinksAddr string `json:"links_addr,omitempty"`
	Zone      string `json:"zone,omitempty"`
	Standby   bool   `json:"standby,omitempty"`
	// Build and Protocol say what binary the member runs (compat.Build)
	// and the newest internal protocol it speaks (compat.Protocol); a
	// build from before they were gossiped leaves them out.
	Build    string `json:"build,omitempty"`
	Protocol int    `json:"protocol,omitempty"`
	// DiskFull is set while the member's disk is below its reserve: it
	// refuses writes and must not be given leadership.
	DiskFull bool `json:"disk_full,omitempty"`
	// DiskSlow is set while the member's synced commits are slow: it hands
	// its leaderships over and must not be given one.
	DiskSlow bool `json:"disk_slow,omitempty"`
	// Leaving is set while the member shuts down: it hands its leaderships
	// over and must not be given one back.
	Leaving bool `json:"leaving,omitempty"`
	// NoSearch is set when the member keeps no chat search index
	// (--no-search-index): no partition's index is left to it.
	NoSearch bool `json:"no_search,omitempty"`
}

// wireMeta is Meta as gossiped, with the cluster id.
type wireMeta struct {
	Cluster string `json:"cluster"`
	Meta
}

// leaveMsg is sent straight to every member (over TCP) by a node about to
// leave, so that they tell its departure from a failure.
type leaveMsg struct {
	Cluster string `json:"cluster"`
	Node    string `json:"leaving"`
}

// decodeMeta parses gossiped metadata.
func decodeMeta(b []byte) (wireMeta, error) {
	var w wireMeta
	if err := json.Unmarshal(b, &w); err != nil {
		return w, fmt.Errorf("bad member metadata: %w", err)
	}
	return w, nil
}

func encodeMeta(w wireMeta) ([]byte, error) {
	b, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	if len(b) >= MaxMetaSize {
		return nil, fmt.Errorf("membership: metadata is %d bytes, the limit is %d", len(b), MaxMetaSize-1)
	}
	return b, nil
}

// Member is one node as this node sees it.
type Member struct {
	ID string
	// Addr is the member's gossip address.
	Addr  string
	Meta  Meta
	State State
	// Since is when this node saw State begin.
	Since time.Time
}

// Event is a change of a member's state. A metadata update has Old == New;
// a member seen for the first time comes with Old Dead.
type Event struct {
	Member   Member
	Old, New State
}

// Config configures a Membership. Zero timing fields take memberlist's LAN
// defaults.
type Config struct {
	// NodeID names this node; it is memberlist's node name.
	NodeID string
	// ClusterID is gossiped with the metadata; members of another cluster
	// are refused.
	ClusterID string
	// BindAddr is the host:port gossip listens on (TCP and UDP); see
	// GossipAddr. Port 0 picks a free one (see Addr).
	BindAddr string
	// AdvertiseAddr is the host:port other nodes reach this one at; empty
	// means BindAddr (or, when BindAddr's host is unspecified, a private
	// address memberlist picks). A host name is resolved once, at New.
	AdvertiseAddr string
	// Meta describes this node; its ID is set to NodeID.
	Meta Meta
	// Keys are the gossip keys (16, 24 or 32 bytes, AES): every message is
	// encrypted and authenticated with the first, and a message that none
	// of them opens is dropped, so knowing the cluster id is worth nothing.
	// Empty means plaintext gossip (an insecure cluster).
	Keys [][]byte
	// OnRefused, when set, is told of gossip refused from a remote address
	// (a message no key opens, a member of another cluster). It must not
	// block.
	OnRefused func(remote, reason string)
	// Join lists gossip addresses of existing members.
	Join []string
	// Logger receives this package's logs; memberlist's own go to it at
	// debug level. Nil means slog.Default(). The package adds no node
	// attribute: the node's logger carries node= already, and a second
	// would repeat the key on every line.
	Logger *slog.Logger

	// ProbeInterval is how often a random member is probed (default 1 s).
	ProbeInterval time.Duration
	// ProbeTimeout is how long a probe waits for an ack (default 500 ms).
	ProbeTimeout time.Duration
	// SuspicionMult scales how long a suspect member has to refute before
	// it is declared dead (default 4).
	SuspicionMult int
	// GossipInterval is how often gossip messages go out (default 200 ms).
	GossipInterval time.Duration
	// PushPullInterval is how often full state is exchanged with a random
	// member (default 30 s).
	PushPullInterval time.Duration
	// TCPTimeout bounds TCP exchanges such as joins (default 10 s).
	TCPTimeout time.Duration
	// DeadNodeReclaimTime is how long a dead member's name stays taken
	// before a node with the same id at another address may reuse it
	// (default 30 s).
	DeadNodeReclaimTime time.Duration
	// EventBuffer is the capacity of Events (default 256); events beyond it
	// are dropped and counted.
	EventBuffer int
}

// GossipAddr derives the gossip address from a node's cluster address: the
// same host, the cluster port plus one. So `--cluster 127.0.0.1:7071` gossips
// on 127.0.0.1:7072 (TCP and UDP).
func GossipAddr(clusterAddr string) (string, error) {
	host, port, err := net.SplitHostPort(clusterAddr)
	if err != nil {
		return "", fmt.Errorf("membership: cluster address %q: %w", clusterAddr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65534 {
		return "", fmt.Errorf("membership: cannot derive a gossip port from cluster address %q", clusterAddr)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
}

// Membership is this node's membership in the gossip pool.
type Membership struct {
	cfg     Config
	log     *slog.Logger
	ml      *memberlist.Memberlist
	meta    atomic.Pointer[wireMeta]
	dropped atomic.Uint64
	keyring *memberlist.Keyring // nil for plaintext gossip
	started time.Time
	addr    string // the advertised gossip address, fixed at start (Addr)

	mu      sync.Mutex // guards members, leaving, closed and sends on events
	members map[string]*Member
	leaving map[string]bool // members that announced their departure
	events  chan Event
	closed  bool

	sends sync.WaitGroup // Leave's announcements

	closeOnce sync.Once
}

// updateTimeout bounds how long UpdateMeta waits for its broadcast.
const updateTimeout = 5 * time.Second

// New starts gossiping on cfg.BindAddr. It does not contact anyone: call
// Join.
func New(cfg Config) (*Membership, error) {
	if cfg.NodeID == "" || cfg.ClusterID == "" {
		return nil, errors.New("membership: a node id and a cluster id are required")
	}
	cfg.Meta.ID = cfg.NodeID
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.EventBuffer <= 0 {
		cfg.EventBuffer = 256
	}
	m := &Membership{
		cfg: cfg, log: cfg.Logger, started: time.Now(),
		members: map[string]*Member{}, leaving: map[string]bool{}, events: make(chan Event, cfg.EventBuffer),
	}
	w := wireMeta{Cluster: cfg.ClusterID, Meta: cfg.Meta}
	if _, err := encodeMeta(w); err != nil {
		return nil, err
	}
	m.meta.Store(&w)
	mc, err := m.memberlistConfig()
	if err != nil {
		return nil, err
	}
	m.ml, err = memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("membership: start gossip on %s: %w", cfg.BindAddr, err)
	}
	// Read once: memberlist rewrites its local node in place on UpdateNode
	// (UpdateMeta), so reading it later would race.
	m.addr = m.ml.LocalNode().Address()
	return m, nil
}

func (m *Membership) memberlistConfig() (*memberlist.Config, error) {
	cfg := m.cfg
	mc := memberlist.DefaultLANConfig()
	mc.Name = cfg.NodeID
	host, port, err := hostPort(cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("membership: bind address: %w", err)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertiseAddr, mc.AdvertisePort = "", port
	adv := cfg.AdvertiseAddr
	if adv == "" && !net.ParseIP(host).IsUnspecified() {
		adv = net.JoinHostPort(host, strconv.Itoa(port))
	}
	if adv != "" {
		if mc.AdvertiseAddr, mc.AdvertisePort, err = hostPort(adv); err != nil {
			return nil, fmt.Errorf("membership: advertise address: %w", err)
		}
		if mc.AdvertisePort == 0 {
			mc.AdvertisePort = port // filled in by memberlist when port is 0
		}
	}
	d := &delegate{m: m}
	mc.Delegate, mc.Events, mc.Merge, mc.Alive, mc.Ping = d, d, d, d, d
	mc.Logger = log.New(logWriter{m}, "", 0)
	if len(cfg.Keys) > 0 {
		kr, err := memberlist.NewKeyring(cfg.Keys, cfg.Keys[0])
		if err != nil {
			return nil, fmt.Errorf("membership: gossip keys: %w", err)
		}
		mc.Keyring, mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = kr, true, true
		m.keyring = kr
	}
	if cfg.ProbeInterval > 0 {
		mc.ProbeInterval = cfg.ProbeInterval
	}
	if cfg.ProbeTimeout > 0 {
		mc.ProbeTimeout = cfg.ProbeTimeout
	}
	if cfg.SuspicionMult > 0 {
		mc.SuspicionMult = cfg.SuspicionMult
	}
	if cfg.GossipInterval > 0 {
		mc.GossipInterval = cfg.GossipInterval
	}
	if cfg.PushPullInterval > 0 {
		mc.PushPullInterval = cfg.PushPullInterval
	}
	if cfg.TCPTimeout > 0 {
		mc.TCPTimeout = cfg.TCPTimeout
	}
	mc.DeadNodeReclaimTime = 30 * time.Second
	if cfg.DeadNodeReclaimTime > 0 {
		mc.DeadNodeReclaimTime = cfg.DeadNodeReclaimTime
	}
	return mc, nil
}

// hostPort splits host:port and resolves a host name to an IP address, which
// is what memberlist binds and advertises.
func hostPort(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", addr)
	}
	if host != "" && net.ParseIP(host) == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil || len(ips) == 0 {
			return "", 0, fmt.Errorf("resolve %q: %w", host, err)
		}
		host = ips[0].IP.String()
	}
	return host, p, nil
}

// Addr returns this node's advertised gossip address.
func (m *Membership) Addr() string { return m.addr }

// Started returns when this Membership began: a member of the cluster map
// it has never seen has been unreachable at least since then.
func (m *Membership) Started() time.Time { return m.started }

// Join contacts the configured members, retrying with backoff until one
// answers or ctx ends. Addresses equal to this node's own are skipped; with
// none left (the first node) it returns at once.
func (m *Membership) Join(ctx context.Context) error {
	self := m.Addr()
	addrs := slices.DeleteFunc(slices.Clone(m.cfg.Join), func(a string) bool { return a == self || a == m.cfg.BindAddr })
	if len(addrs) == 0 {
		return nil
	}
	backoff := 50 * time.Millisecond
	for {
		n, err := m.ml.Join(addrs)
		if n > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("membership: join via %v: %w", addrs, errors.Join(err, ctx.Err()))
		case <-time.After(backoff):
		}
		m.log.Debug("gossip join attempt failed", "via", addrs, "err", err)
		backoff = min(2*backoff, 2*time.Second)
	}
}

// AddKeys installs gossip keys beside the one in use, which stays in use:
// messages sealed with any of them can then be read. It fails on a
// Membership made without keys.
func (m *Membership) AddKeys(keys [][]byte) error {
	if m.keyring == nil || len(keys) == 0 {
		return errors.New("membership: gossip runs without keys")
	}
	for _, k := range keys {
		if err := m.keyring.AddKey(k); err != nil {
			return fmt.Errorf("membership: add gossip key: %w", err)
		}
	}
	return nil
}

// SetKeys installs a new list of gossip keys, the first in use: keys not
// listed are removed. It fails on a Membership made without keys.
func (m *Membership) SetKeys(keys [][]byte) error {
	if err := m.AddKeys(keys); err != nil {
		return err
	}
	if err := m.keyring.UseKey(keys[0]); err != nil {
		return fmt.Errorf("membership: use gossip key: %w", err)
	}
	for _, old := range m.keyring.GetKeys() {
		if !slices.ContainsFunc(keys, func(k []byte) bool { return string(k) == string(old) }) {
			_ = m.keyring.RemoveKey(old)
		}
	}
	return nil
}

// Keys returns the gossip keys this node can read, nil without keys.
func (m *Membership) Keys() [][]byte {
	if m.keyring == nil {
		return nil
	}
	return m.keyring.GetKeys()
}

// PrimaryKey returns the gossip key in use, nil without keys.
func (m *Membership) PrimaryKey() []byte {
	if m.keyring == nil {
		return nil
	}
	return m.keyring.GetPrimaryKey()
}

// Contact exchanges state once with the members at addrs (gossip
// addresses), so that members this node lost track of (declared dead long
// ago, or never met) merge back; it returns how many answered.
func (m *Membership) Contact(addrs []string) (int, error) {
	if m.isClosed() {
		return 0, errClosed
	}
	return m.ml.Join(addrs)
}

// Members returns every member this node knows of, itself included, sorted by
// id. Dead and left members stay listed until they come back or Forget.
func (m *Membership) Members() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Member, 0, len(m.members))
	for _, mb := range m.members {
		out = append(out, *mb)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Member returns one member by id.
func (m *Membership) Member(id string) (Member, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mb, ok := m.members[id]
	if !ok {
		return Member{}, false
	}
	return *mb, true
}

// Forget drops a dead or left member from Members, once the cluster map no
// longer lists it. An alive member is kept.
func (m *Membership) Forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mb, ok := m.members[id]; ok && (mb.State == Dead || mb.State == Left) {
		delete(m.members, id)
	}
}

// Events delivers member state changes. It is bounded and never blocks
// gossip: when the reader falls behind, events are dropped (see Dropped) and
// Members stays the source of truth. It is closed by Close.
func (m *Membership) Events() <-chan Event { return m.events }

// Dropped returns how many events did not fit in Events.
func (m *Membership) Dropped() uint64 { return m.dropped.Load() }

// LocalMeta returns this node's metadata as it gossips it now.
func (m *Membership) LocalMeta() Meta { return m.meta.Load().Meta }

// UpdateMeta changes this node's metadata and gossips it; it waits until the
// update went out to some member, or 5 s.
func (m *Membership) UpdateMeta(meta Meta) error {
	if m.isClosed() {
		return errClosed
	}
	meta.ID = m.cfg.NodeID
	w := wireMeta{Cluster: m.cfg.ClusterID, Meta: meta}
	if _, err := encodeMeta(w); err != nil {
		return err
	}
	m.meta.Store(&w)
	if err := m.ml.UpdateNode(updateTimeout); err != nil {
		return fmt.Errorf("membership: gossip metadata update: %w", err)
	}
	return nil
}

// Leave tells the others this node is leaving on purpose, so they see it
// Left rather than Dead: it announces the departure to every member it sees
// alive, then gossips it, waiting up to timeout (5 s when not positive) in
// all. It keeps answering gossip until Close.
func (m *Membership) Leave(timeout time.Duration) error {
	if m.isClosed() {
		return errClosed
	}
	if timeout <= 0 {
		timeout = updateTimeout
	}
	deadline := time.Now().Add(timeout)
	msg, _ := json.Marshal(leaveMsg{Cluster: m.cfg.ClusterID, Node: m.cfg.NodeID}) // cannot fail
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, mb := range m.Members() {
		if mb.ID == m.cfg.NodeID || mb.State == Dead || mb.State == Left {
			continue
		}
		to := memberlist.Node{Name: mb.ID}
		to.Addr, to.Port = splitAddr(mb.Addr)
		wg.Add(1)
		m.sends.Go(func() {
			defer wg.Done()
			if err := m.ml.SendReliable(&to, msg); err != nil {
				m.log.Debug("departure announcement failed", "member", to.Name, "err", err)
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout / 2):
	}
	if err := m.ml.Leave(max(time.Until(deadline), time.Millisecond)); err != nil {
		return fmt.Errorf("membership: leave: %w", err)
	}
	return nil
}

func splitAddr(addr string) (net.IP, uint16) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, 0
	}
	p, _ := strconv.Atoi(port)
	return net.ParseIP(host), uint16(p)
}

// departed records a member's announcement that it is leaving; one already
// seen dead (the announcement came late) is now Left.
func (m *Membership) departed(name string) {
	m.mu.Lock()
	m.leaving[name] = true
	mb, ok := m.members[name]
	dead := ok && mb.State == Dead
	m.mu.Unlock()
	if dead {
		m.transition(name, Dead, Left)
	}
}

var errClosed = errors.New("membership: closed")

func (m *Membership) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// Close stops gossip at once (without Leave, the others will see this node
// fail) and closes Events.
func (m *Membership) Close() error {
	var err error
	m.closeOnce.Do(func() {
		err = m.ml.Shutdown()
		m.sends.Wait() // the transport is down: they fail fast
		m.mu.Lock()
		m.closed = true
		close(m.events)
		m.mu.Unlock()
	})
	return err
}

// set records a member's state, address (unless empty) and metadata (unless
// nil), and emits an event when state or metadata changed. It runs inside
// memberlist's callbacks: it must not block or call back into memberlist.
func (m *Membership) set(name, addr string, state State, w *wireMeta) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	mb, known := m.members[name]
	old := Dead // a member first seen is reported as coming from nothing
	if known {
		old = mb.State
	} else {
		mb = &Member{ID: name, State: state, Since: time.Now()}
		m.members[name] = mb
	}
	if addr != "" {
		mb.Addr = addr
	}
	switch {
	case state == Alive && old != Alive && old != Suspect:
		delete(m.leaving, name) // back after leaving: a new departure is needed
	case state == Dead && m.leaving[name]:
		state = Left
	}
	metaChanged := w != nil && w.Meta != mb.Meta
	if metaChanged {
		mb.Meta = w.Meta
	}
	if known && old == state && !metaChanged {
		return
	}
	if old != state {
		mb.State, mb.Since = state, time.Now()
		level := slog.LevelInfo
		if state == Suspect || name == m.cfg.NodeID {
			level = slog.LevelDebug
		}
		m.log.Log(context.Background(), level, "member "+state.String(), "member", name, "was", old.String())
	}
	select {
	case m.events <- Event{Member: *mb, Old: old, New: state}:
	default:
		m.dropped.Add(1)
	}
}

// transition moves a member from one state to another, if it is in it.
func (m *Membership) transition(name string, from, to State) {
	m.mu.Lock()
	mb, ok := m.members[name]
	ok = ok && mb.State == from
	m.mu.Unlock()
	if ok {
		m.set(name, "", to, nil)
	}
}

// logWriter turns memberlist's log lines ("[LEVEL] memberlist: message")
// into debug records, and notices this node's own suspicions.
type logWriter struct{ m *Membership }

// refusedGossip reports whether a memberlist error line is about gossip
// this node refused: one it cannot decrypt or that is not encrypted.
func refusedGossip(line string) bool {
	l := strings.ToLower(line)
	return strings.Contains(l, "decrypt") || strings.Contains(l, "encrypt")
}

// remoteOf extracts the "from=ADDR" memberlist puts in its log lines.
func remoteOf(line string) string {
	i := strings.Index(line, "from=")
	if i < 0 {
		return ""
	}
	rest := line[i+len("from="):]
	if j := strings.IndexAny(rest, " \t"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

const suspectPrefix, suspectSuffix = "Suspect ", " has failed, no acks received"

func (w logWriter) Write(b []byte) (int, error) {
	line := strings.TrimSpace(string(b))
	level := ""
	if strings.HasPrefix(line, "[") {
		if i := strings.IndexByte(line, ']'); i > 0 {
			level, line = line[1:i], strings.TrimSpace(line[i+1:])
		}
	}
	line = strings.TrimPrefix(line, "memberlist: ")
	w.m.log.Debug(line, "component", "memberlist", "memberlist_level", level)
	if level == "ERR" && w.m.cfg.OnRefused != nil && refusedGossip(line) {
		w.m.cfg.OnRefused(remoteOf(line), line)
	}
	if strings.HasPrefix(line, suspectPrefix) && strings.HasSuffix(line, suspectSuffix) {
		// This node's probe failed: the member is suspect here.
		w.m.transition(strings.TrimSuffix(strings.TrimPrefix(line, suspectPrefix), suspectSuffix), Alive, Suspect)
	}
	return len(b), nil
}

// Package node is the wiring root of one Parley node: New(cfg) -> Start(ctx)
// -> Close(); the node owns every goroutine it starts. It opens the Pebble
// store, the internal transport and the multi-Raft engine, and hands the
// request path (internal/partition: router, server of forwarded calls, apply
// notifier, live feeds) and the presence tracker (internal/presence/tracker)
// what they need. What stays here is the node's own business: start-up and
// shutdown, the cluster map kept by the metadata group, self-healing (gossip,
// the placement controller, the reconciler that makes Raft membership follow
// the map), identity and join, the table of internal call methods (rpc.go)
// and the operator endpoints. See DESIGN.md.
package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/parley-chat/parley/internal/clock"
	"github.com/parley-chat/parley/internal/compat"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/connlimit"
	"github.com/parley-chat/parley/internal/metrics"
	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/partition"
	"github.com/parley-chat/parley/internal/password"
	"github.com/parley-chat/parley/internal/pki"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/presence/tracker"
	"github.com/parley-chat/parley/internal/search"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/transport"
)

// Node is one running Parley node.
type Node struct {
	cfg config.Config
	log *slog.Logger
	// clock stamps proposals and decides expiries (clock_jump.go).
	clock  *clock.Clock
	db     *storage.DB
	tr     *transport.Transport
	engine *multiraft.Engine
	// live is the engine as the transport's handlers see it: the transport
	// listens before the engine exists, so they read it atomically. It is
	// stored once the request path below exists.
	live atomic.Pointer[multiraft.Engine]
	dir  directory
	// The request path (internal/partition), made in Start once the
	// engine exists; notes before it, as the engine's state machines
	// record into it.
	notes    *partition.Notifier
	router   *partition.Router
	server   *partition.Server
	feeds    *partition.Feeds
	kvFeeds  *partition.KVFeeds
	presence *tracker.Tracker // who is online through this node
	indexes  *search.Indexes  // chat search indexes of the local replicas (search.go)
	searcher *search.Searcher
	// searchChoice is which partitions this node indexes (search_holders.go).
	searchChoice searchChoice
	// calls is the table of internal call methods (rpc.go).
	calls  map[string]callHandler
	limits atomic.Pointer[limiter] // per-user limits (limits.go), set by startHTTP

	rec   atomic.Pointer[nodeRecord]
	cmap  atomic.Pointer[mapView]
	ready atomic.Bool
	// rebuilding is set when this start set a data directory that may not
	// be used again aside (rebuild.go): the node joins under its old id,
	// never creates a cluster.
	rebuilding bool

	fs vfs.FS // nil: the operating system's
	// hashParams are the argon2id costs of new password hashes (zero:
	// password.DefaultParams); hashes already stored keep their own.
	hashParams password.Params

	metrics *metrics.Metrics
	ops     opsState // operator figures: lag, requests, cache (stats.go)
	httpSrv *http.Server
	httpLn  net.Listener
	// conns caps the client connections of httpLn and links together
	// (conns.go).
	conns *connlimit.Limiter
	// links serves short links alone (links.go), when Config.LinksAddr
	// is set.
	links linksListener

	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	reconcile chan struct{}
	closeOnce sync.Once

	heal healState // gossip, events and placement control (gossip.go)

	// ident is this node's certificate and the cluster CA (nil while
	// joining, and without the cluster's own PKI); joinTok is the join
	// token while joining (identity.go).
	ident   atomic.Pointer[pki.Identity]
	joinTok pki.Token
	audit   *audit.Log
	created bool // this start created the cluster
	// heard is when Raft traffic last came from each node (heard.go).
	heard heardLog

	// Stale data detection (boot.go): this start's random id, the boots
	// seen of each peer, and the stop of a node found stale.
	bootID    string
	announced atomic.Bool // every reachable peer was told of this start
	reached   atomic.Bool // every local replica has known a leader since (reached.go)
	boots     bootGuard
	staleOnce sync.Once
	// protocols remembers what protocol each peer spoke (peerprotocol.go).
	protocols peerProtocols
	fatal     chan error
}

// nodeRecord is what a node keeps about itself in its store.
type nodeRecord struct {
	// Format is the compat.DataFormat the data directory was written in
	// (0: the first, from before it was recorded).
	Format      int    `json:"format,omitempty"`
	ID          string `json:"id"`
	ClusterID   string `json:"cluster_id"`
	Incarnation string `json:"incarnation"`
	// Boots counts the starts of this data directory (boot.go); Stale,
	// once set, is why a peer found it went back in time, and no start
	// uses it again.
	Boots       uint64 `json:"boots,omitempty"`
	Stale       string `json:"stale,omitempty"`
	MetaReplica uint64 `json:"meta_replica"`
	// Creator is set on the node that created the cluster until the
	// creation command is applied, so a crash in between finishes it.
	Creator bool `json:"creator,omitempty"`
	// JoinMap is the cluster map the node was given when it joined: enough
	// to reach the other members until its metadata replica has the map.
	JoinMap *placement.Map `json:"join_map,omitempty"`
	// Key, Cert and CA are the node's credentials on the cluster port
	// (PKCS#8 key, its certificate, the cluster CA's; DER), empty in a
	// cluster without its own CA (identity.go).
	Key  []byte `json:"key,omitempty"`
	Cert []byte `json:"cert,omitempty"`
	CA   []byte `json:"ca,omitempty"`
	// GossipKeys are the gossip keys the node was given (joining) or made
	// (creating), the one in use first, until its metadata replica has them.
	GossipKeys [][]byte `json:"gossip_keys,omitempty"`
	// Pending holds a creator's new secrets until the cluster is created.
	Pending *pendingCreate `json:"pending,omitempty"`
}

// mapView is one version of the cluster map with lookup indexes.
type mapView struct {
	m          *placement.Map
	addrOf     map[uint64]string   // replica id -> node internal address
	replicasOf map[uint64][]string // group -> node addresses of its replicas
	nodesOf    map[uint64][]string // group -> node ids of its replicas, the map's order
	retired    map[uint64]string   // replica id -> node id, dropped from the map (retired_replicas.go)
	// revoked holds the fingerprints of revoked certificates; revokedNodes
	// maps each to its node.
	revoked      map[string]bool
	revokedNodes map[string]string
}

func newMapView(m *placement.Map) *mapView {
	v := &mapView{m: m, addrOf: map[uint64]string{}, replicasOf: map[uint64][]string{}, nodesOf: map[uint64][]string{},
		revoked: map[string]bool{}, revokedNodes: map[string]string{}}
	for _, r := range m.Revoked {
		v.revoked[r.Fingerprint], v.revokedNodes[r.Fingerprint] = true, r.Node
	}
	addr := map[string]string{}
	for _, n := range m.Nodes {
		addr[n.ID] = n.Addr
	}
	for _, g := range m.Groups {
		for _, r := range g.Replicas {
			v.nodesOf[g.ID] = append(v.nodesOf[g.ID], r.Node)
			if a, ok := addr[r.Node]; ok {
				v.addrOf[r.ID] = a
				v.replicasOf[g.ID] = append(v.replicasOf[g.ID], a)
			}
		}
	}
	return v
}

// Option adjusts how a node is built, beyond its configuration.
type Option func(*Node)

// WithFS makes the node keep its store on fs instead of the operating
// system's file system (tests simulate crashes with a crashable memory FS).
func WithFS(fs vfs.FS) Option { return func(n *Node) { n.fs = fs } }

// WithPasswordParams makes the node hash new passwords with p instead of
// password.DefaultParams: in-process test clusters use the cheapest costs
// (passwordtest.Params), as argon2id's default costs dominate a test that
// signs in many users under the race detector.
func WithPasswordParams(p password.Params) Option { return func(n *Node) { n.hashParams = p } }

// New prepares a node; nothing listens until Start.
func New(cfg config.Config, log *slog.Logger, opts ...Option) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Node{
		cfg:       cfg,
		log:       log.With("node", cfg.ID),
		reconcile: make(chan struct{}, 1),
		fatal:     make(chan error, 1),
	}
	n.dir = directory{view: &n.cmap, partitions: cfg.Partitions}
	n.audit = audit.NewLog(cfg.ID, n.log)
	n.heal.init()
	n.clock = clock.New(n.onClockJump)
	n.calls = n.callTable()
	n.notes = partition.NewNotifier(func(p uint64) bool {
		e := n.live.Load()
		return e != nil && e.HasGroup(p)
	})
	for _, o := range opts {
		o(n)
	}
	return n, nil
}

// Router returns the node's request path for the product layer (nil
// before Start).
func (n *Node) Router() *partition.Router { return n.router }

// Presence returns the node's presence tracker (nil before Start).
func (n *Node) Presence() *tracker.Tracker { return n.presence }

// Engine returns the node's multi-Raft engine.
func (n *Node) Engine() *multiraft.Engine { return n.engine }

// Transport returns the node's internal transport (tests inject faults).
func (n *Node) Transport() *transport.Transport { return n.tr }

// DB returns the node's store.
func (n *Node) DB() *storage.DB { return n.db }

// ID returns the node's id.
func (n *Node) ID() string { return n.cfg.ID }

// ClusterAddr returns the internal address the node listens on.
func (n *Node) ClusterAddr() string { return n.tr.Addr() }

// HTTPAddr returns the address the HTTP API listens on.
func (n *Node) HTTPAddr() string { return n.httpLn.Addr().String() }

// Map returns the current cluster map (nil before the node knows it).
func (n *Node) Map() *placement.Map {
	if v := n.cmap.Load(); v != nil {
		return v.m
	}
	return nil
}

// Ready reports whether the node can serve requests: it knows the cluster
// map, its engine runs, every reachable peer was told of this start
// (boot.go), and the leaders of its replicas reach it (reached.go).
func (n *Node) Ready() bool {
	return n.ready.Load() && n.announced.Load() && n.reached.Load() && n.engine.Err() == nil
}

// Start opens the store, joins or creates the cluster (or resumes), and
// starts serving. It returns once the node can serve requests or ctx ends.
func (n *Node) Start(ctx context.Context) error {
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if n.fs == nil {
		if err := os.MkdirAll(n.cfg.DataDir, 0o750); err != nil {
			return fmt.Errorf("create data dir: %w", err)
		}
	}
	db, err := n.openStore() // rebuild.go
	if err != nil {
		return n.storeOpenError(err)
	}
	n.db = db
	n.boots.db = db
	n.protocols.db = db
	if err := n.loadRecord(); err != nil {
		n.Close()
		return err
	}
	n.resumeRebuild()
	n.warnSetAside()
	if err := n.countBoot(); err != nil {
		n.Close()
		return err
	}
	if err := n.checkRestored(); err != nil { // restore.go
		n.Close()
		return err
	}
	tr, err := n.newTransport()
	if err != nil {
		n.Close()
		return err
	}
	n.tr = tr
	if n.engine, err = multiraft.New(n.engineConfig(db, tr)); err != nil {
		n.Close()
		return err
	}
	n.startRequestPath()
	n.live.Store(n.engine)
	n.engine.Start()
	if err := n.startHTTP(); err != nil {
		n.Close()
		return err
	}
	if err := n.startPprof(); err != nil {
		n.Close()
		return err
	}
	if err := n.openCluster(ctx); err != nil {
		n.Close()
		return err
	}
	if err := n.announceBoot(ctx); err != nil {
		n.Close()
		return fmt.Errorf("data dir %s is stale: %w", n.cfg.DataDir, err)
	}
	n.announced.Store(true)
	if err := n.startGossip(); err != nil {
		n.Close()
		return err
	}
	n.goBackground(n.watchEngine)
	n.goBackground(n.watchReached)
	n.goBackground(n.watchStore)
	n.goBackground(n.reconcileLoop)
	n.goBackground(func() { n.presence.Frames(n.ctx, n.feeds, tracker.FrameInterval) })
	n.goBackground(n.controlLoop)
	n.goBackground(n.runSearch)
	return nil
}

// newTransport listens on the cluster port with the cluster's TLS and the
// node's boot checks.
func (n *Node) newTransport() (*transport.Transport, error) {
	tlsCfg, identify, err := n.transportSecurity()
	if err != nil {
		return nil, err
	}
	tr, err := transport.New(transport.Config{
		ListenAddr:    n.cfg.ClusterAddr,
		AdvertiseAddr: n.cfg.Advertise,
		TLS:           tlsCfg,
		Identify:      identify,
		OnRefused:     n.transportRefused,
		Boot:          n.boot,
		CheckBoot:     n.boots.check,
		OnStale:       n.staleRefused,
		ClusterID:     n.clusterID,
		NodeID:        n.cfg.ID,
		Logger:        n.log,
	}, n)
	if err != nil {
		return nil, fmt.Errorf("listen for cluster traffic on %s: %w", n.cfg.ClusterAddr, err)
	}
	return tr, nil
}

// engineConfig is the multi-Raft engine's configuration: the node's store,
// transport and directory, its timings, and the node's hooks.
func (n *Node) engineConfig(db *storage.DB, tr *transport.Transport) multiraft.Config {
	ecfg := multiraft.DefaultConfig()
	ecfg.DB, ecfg.Sender, ecfg.Directory, ecfg.Logger = db, tr, &n.dir, n.log
	ecfg.Applier = n.applierFor
	ecfg.TickInterval, ecfg.ElectionTicks = n.cfg.TickInterval, n.cfg.ElectionTicks
	ecfg.DedupWindow = n.cfg.DedupWindow
	ecfg.Now = n.clock.Now
	ecfg.CompactionThreshold = n.cfg.CompactionThreshold
	ecfg.ReadRetry = n.cfg.TickInterval * time.Duration(n.cfg.ElectionTicks) / 2 // half the election timeout, as etcd
	ecfg.Accept = n.accept
	ecfg.OnApplied = n.onApplied
	ecfg.OnConfChange = n.onConfChange
	ecfg.ClusterProtocol = n.ClusterProtocol
	ecfg.PeerDisk = n.peerDisk
	ecfg.OnLostLog = n.lostLog
	ecfg.RoundPause = n.cfg.RoundPause
	if ecfg.RoundPause == 0 {
		ecfg.RoundPause = -1 // off
	}
	ecfg.SlowSync = n.cfg.DiskSlowSync
	if ecfg.SlowSync == 0 {
		ecfg.SlowSync = -1 // off
	}
	ecfg.OnLag = n.ops.lag.record
	ecfg.OnProposal = n.ops.phases.record
	return ecfg
}

// Close stops everything the node started at once, dropping requests in
// flight (clients see a broken connection and retry). The store keeps all
// data. Shutdown is the graceful way.
func (n *Node) Close() {
	n.closeOnce.Do(func() {
		if n.cancel != nil {
			n.cancel()
		}
		if n.feeds != nil {
			n.feeds.Close() // streams outlive http.Server.Close (hijacked)
		}
		if n.kvFeeds != nil {
			n.kvFeeds.Close()
		}
		if n.httpSrv != nil {
			_ = n.httpSrv.Close()
		}
		done, cancel := context.WithCancel(context.Background())
		cancel()
		n.stopLinks(done) // at once: close every connection
		n.wg.Wait()
		n.stopGossip(false)
		if n.engine != nil {
			n.engine.Close()
		}
		if n.tr != nil {
			_ = n.tr.Close()
		}
		if n.server != nil {
			n.server.Close() // no call reaches it any more
		}
		if n.db != nil {
			_ = n.db.Close()
		}
	})
}

// Shutdown ends the presence leases of the users connected here (so they
// show offline at once), transfers leadership of every group this node leads
// to another replica (bounded by ctx and by three election timeouts: when the
// whole cluster stops at once nobody can take over), then closes the node:
// what SIGTERM does.
func (n *Node) Shutdown(ctx context.Context) {
	if n.engine != nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		if err := n.presence.ReleaseAll(pctx); err != nil {
			n.log.Debug("presence leases not released before exit; they expire", "err", err)
		}
		cancel()
		tctx, cancel := context.WithTimeout(ctx, 3*time.Duration(n.cfg.ElectionTicks)*n.cfg.TickInterval)
		defer cancel()
		n.gossipLeaving()
		if err := n.engine.TransferLeadership(tctx); err != nil {
			n.log.Warn("leadership transfer before exit incomplete", "err", err)
		}
	}
	n.stopGossip(true)
	if n.httpSrv != nil {
		_ = n.httpSrv.Shutdown(ctx)
	}
	n.stopLinks(ctx)
	n.Close()
}

// goBackground runs fn on a goroutine the node waits for on Close.
func (n *Node) goBackground(fn func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		fn()
	}()
}

// self returns the internal address peers reach this node at, as recorded
// in the cluster map.
func (n *Node) self() string {
	if n.cfg.Advertise != "" {
		return n.cfg.Advertise
	}
	return n.tr.Addr()
}

func (n *Node) clusterID() string {
	if r := n.rec.Load(); r != nil {
		return r.ClusterID
	}
	return ""
}

// startRequestPath makes the request path over the engine: the router, the
// server of forwarded calls, the live feeds and the presence tracker.
func (n *Node) startRequestPath() {
	d := partition.Deps{Engine: n.engine, DB: n.db, Directory: &n.dir, Caller: n.tr, Self: n.self(), ClusterProtocol: n.ClusterProtocol}
	n.router = partition.NewRouter(d)
	n.server = partition.NewServer(d)
	n.feeds = partition.NewFeeds(n.ctx, n.router, n.notes)
	n.kvFeeds = partition.NewKVFeeds(n.ctx, n.router, n.notes)
	n.presence = tracker.New(n.cfg.ID, n.cfg.PresenceTTL, n.router, n.leads, n.log)
	n.startSearch()
}

// leads reports whether this node's replica leads partition p.
func (n *Node) leads(p uint64) bool {
	_, local := n.engine.Leader(p)
	return local
}

func (n *Node) loadRecord() error {
	r, ok, err := readRecord(n.db)
	if err != nil || !ok {
		return err
	}
	if r.ID != n.cfg.ID {
		return fmt.Errorf("data dir %s belongs to node %q, not %q: use --id %s or another --data-dir", n.cfg.DataDir, r.ID, n.cfg.ID, r.ID)
	}
	if err := compat.CheckDataFormat(n.cfg.DataDir, r.Format); err != nil {
		return err
	}
	if r.Stale != "" {
		return fmt.Errorf("data dir %s was found stale and may not be used again (%s); "+
			"start it with --rebuild-quarantined to have it set aside and rejoin; or move it away, remove this node from the cluster (parley cluster remove %s, once the cluster sees it dead) and start it on an empty data dir with --join and --join-token: it joins again and copies its replicas from its peers", n.cfg.DataDir, r.Stale, n.cfg.ID)
	}
	n.rec.Store(r)
	return nil
}

func (n *Node) saveRecord(r *nodeRecord) error {
	r.Format = compat.DataFormat
	// The start count never goes down, whatever copy of the record a
	// caller edited (boot.go).
	r.Boots = max(r.Boots, 1)
	if cur := n.rec.Load(); cur != nil && cur.Incarnation == r.Incarnation {
		r.Boots = max(r.Boots, cur.Boots)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := n.db.SaveNodeRecord(b); err != nil {
		return fmt.Errorf("save node record: %w", err)
	}
	n.rec.Store(r)
	return nil
}

// applierFor returns the state machine of a group.
func (n *Node) applierFor(group uint64) state.Applier {
	if group == placement.MetaGroup {
		return placement.StateMachine{}
	}
	return partition.StateMachine(n.notes)
}

// accept lets a message create a replica that the cluster map assigns to
// this node (runs on the driver loop).
func (n *Node) accept(group, replica uint64) bool {
	if group == placement.MetaGroup {
		r := n.rec.Load()
		return r != nil && r.MetaReplica == replica
	}
	m := n.Map()
	if m == nil {
		return false
	}
	r, ok := m.ReplicaOn(group, n.cfg.ID)
	return ok && r.ID == replica
}

// onApplied wakes the waiters of what a group applied and refreshes the
// cluster map when the metadata group applied (runs on the driver loop: it
// must stay quick).
func (n *Node) onApplied(group, applied uint64) {
	n.notes.Applied(group, applied)
	if group != placement.MetaGroup {
		return
	}
	m, ok, err := placement.LoadMap(n.db.State(placement.MetaGroup))
	if err != nil {
		n.log.Error("cannot read cluster map", "err", err)
		return
	}
	if ok {
		n.setMap(m)
	}
}

func (n *Node) setMap(m *placement.Map) {
	old := n.cmap.Load()
	cur := newMapView(m).keepRetired(old)
	n.cmap.Store(cur)
	n.dropRevoked(old, cur)
	n.ready.Store(true)
	n.kickReconcile()
}

// onConfChange closes and deletes a replica that was removed from its group
// (runs on the driver loop, so the work goes to a goroutine).
func (n *Node) onConfChange(group, replica uint64, removedSelf bool) {
	if !removedSelf || group == placement.MetaGroup {
		n.kickReconcile()
		return
	}
	n.goBackground(func() {
		ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
		defer cancel()
		if err := n.engine.CloseGroup(ctx, group, replica, true); err != nil && !errors.Is(err, context.Canceled) {
			n.log.Warn("cannot delete removed replica", "group", group, "replica", replica, "err", err)
			return
		}
		n.log.Info("replica removed from this node", "group", group, "replica", replica)
	})
}

func (n *Node) kickReconcile() {
	select {
	case n.reconcile <- struct{}{}:
	default:
	}
}

// directory answers where replicas are from the current cluster map.
type directory struct {
	view       *atomic.Pointer[mapView]
	partitions int // configured, until the map is known
}

var (
	_ multiraft.Directory = (*directory)(nil)
	_ partition.Directory = (*directory)(nil)
)

// Partitions implements partition.Directory.
func (d *directory) Partitions() int {
	if v := d.view.Load(); v != nil {
		return v.m.Partitions
	}
	return d.partitions
}

// AddrOf implements multiraft.Directory and partition.Directory.
func (d *directory) AddrOf(replica uint64) (string, bool) {
	v := d.view.Load()
	if v == nil {
		return "", false
	}
	a, ok := v.addrOf[replica]
	return a, ok
}

// ReplicaAddrs implements partition.Directory.
func (d *directory) ReplicaAddrs(g uint64) []string {
	if v := d.view.Load(); v != nil {
		return v.replicasOf[g]
	}
	return nil
}

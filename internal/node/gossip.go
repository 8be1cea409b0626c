package node

import (
	"context"
	"fmt"
	"github.com/parley-chat/parley/internal/compat"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/internal/membership"
	"github.com/parley-chat/parley/internal/placement"
)

// healState is the node's part in self-healing: its gossip membership, its
// event log and, while it leads the metadata group, the controller's memory.
type healState struct {
	gossip atomic.Pointer[membership.Membership]
	events *eventLog

	ctlMu       sync.Mutex
	nodeStates  map[string]string // node states of the map the controller last saw
	lastOrphans time.Time         // last sweep for replicas removed while away
	// promoteHeld is when each group's lone promotion first waited for a
	// second learner (reconcile.go; the reconcile goroutine's alone).
	promoteHeld map[uint64]time.Time
	// confBusy are the groups whose membership change is under way
	// (reconcile.go, startConfChange), guarded by confMu.
	confMu   sync.Mutex
	confBusy map[uint64]bool

	// gossipRefusals and callRefusals throttle the audit of refused gossip
	// and refused cluster-port connections (gossipkeys.go).
	gossipRefusals, callRefusals refusalThrottle
}

func (h *healState) init() {
	h.events = newEventLog()
}

// rejoinEvery is how often a node contacts the map's members that gossip
// does not see alive: at start (joining), and so that a node back from a
// pause or a partition merges again even after memberlist stopped
// gossiping to it.
const rejoinEvery = 2 * time.Second

// gossipTimings returns memberlist's probe interval and timeout, scaled
// with the Raft tick (1 s and 500 ms at the default 100 ms tick, faster for
// tests that shorten the tick).
func (n *Node) gossipTimings() (probe, timeout time.Duration) {
	probe = min(max(20*n.cfg.TickInterval, 300*time.Millisecond), time.Second)
	return probe, probe / 2
}

// gossipBind returns the address gossip listens on: GossipAddr, or the
// cluster listener's port plus one; a cluster port of 0 (picked at start)
// makes the gossip port picked at start too.
func (n *Node) gossipBind() (string, error) {
	if n.cfg.GossipAddr != "" {
		return n.cfg.GossipAddr, nil
	}
	if _, port, err := net.SplitHostPort(n.cfg.ClusterAddr); err == nil && port == "0" {
		host, _, _ := net.SplitHostPort(n.tr.Addr())
		return net.JoinHostPort(host, "0"), nil
	}
	return membership.GossipAddr(n.tr.Addr())
}

// gossipAdvertise returns the gossip address other nodes reach this one at,
// as recorded in the cluster map: the actual one once gossip runs; before,
// the configured or derived one, or "" when the port is picked at start
// (startGossip records it then).
func (n *Node) gossipAdvertise() string {
	if ml := n.heal.gossip.Load(); ml != nil {
		return ml.Addr()
	}
	bind, err := n.gossipBind()
	if _, port, _ := net.SplitHostPort(bind); err != nil || port == "0" {
		return ""
	}
	if n.cfg.GossipAddr != "" {
		return n.cfg.GossipAddr
	}
	a, _ := membership.GossipAddr(n.self())
	return a
}

// gossipAddrOf returns the gossip address of a node of the map.
func gossipAddrOf(nd placement.Node) string {
	if nd.GossipAddr != "" {
		return nd.GossipAddr
	}
	a, _ := membership.GossipAddr(nd.Addr)
	return a
}

// startGossip joins the gossip pool once the node knows its cluster: it
// contacts the --join targets' gossip ports and every member of the map.
func (n *Node) startGossip() error {
	rec := n.rec.Load()
	bind, err := n.gossipBind()
	if err != nil {
		return err
	}
	adv := n.gossipAdvertise()
	if host, _, err := net.SplitHostPort(adv); err != nil || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
		adv = "" // the bind address, or a private one memberlist picks
	}
	probe, timeout := n.gossipTimings()
	ml, err := membership.New(membership.Config{
		NodeID:        n.cfg.ID,
		ClusterID:     rec.ClusterID,
		BindAddr:      bind,
		AdvertiseAddr: adv,
		Meta: membership.Meta{
			ClusterAddr: n.self(), HTTPAddr: n.httpAdvertise(), LinksAddr: n.linksAdvertise(), Zone: n.cfg.Zone, Standby: n.cfg.Standby,
			Build: compat.Build(), Protocol: compat.Protocol, NoSearch: n.cfg.NoSearchIndex,
		},
		Logger:        n.log,
		ProbeInterval: probe,
		ProbeTimeout:  timeout,
		// Joins and state exchanges with a paused node must not hold up
		// Close for memberlist's default 10 s.
		TCPTimeout: 2 * time.Second,
		Keys:       n.gossipKeys(),
		OnRefused:  n.gossipRefused,
	})
	if err != nil {
		return fmt.Errorf("start membership gossip on %s: %w", bind, err)
	}
	n.heal.gossip.Store(ml)
	n.goBackground(func() { n.syncGossipKeys(ml) })
	n.goBackground(n.publishGossipAddr)
	n.goBackground(func() { n.gossipLoop(ml) })
	n.goBackground(func() { n.watchDisk(ml) })
	return nil
}

// gossipAddrRecheck is how long publishGossipAddr waits for its own copy
// of the map to show an address it recorded before recording it again.
const gossipAddrRecheck = time.Minute

// publishGossipAddr records this node's actual gossip address in the map
// when the map has another one (a port picked at start, a pod's new IP),
// retrying until it is there. The map it reads is this node's replica of
// the metadata group, which may show a committed record late (for as long
// as the leader cannot reach this node, such as while the cluster's DNS
// still gives its old IP), so once a record is committed it waits for it
// rather than proposing the same record again.
func (n *Node) publishGossipAddr() {
	var recorded time.Time
	for attempt := 0; ; attempt++ {
		if !n.gossipAddrStale() {
			return
		}
		if time.Since(recorded) >= gossipAddrRecheck {
			info := n.nodeInfo(n.rec.Load())
			info.Addr, info.HTTPAddr = "", ""
			ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
			_, err := n.router.Propose(ctx, placement.MetaGroup, "", placement.Encode(placement.UpdateNode{Node: *info}))
			cancel()
			if err == nil {
				n.log.Info("gossip address recorded in the cluster map", "gossip", info.GossipAddr)
				recorded = time.Now()
			}
		}
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(time.Duration(min(attempt+1, 10)) * 200 * time.Millisecond):
		}
	}
}

// gossipAddrStale reports whether the map lists this node (this
// incarnation) with another gossip address than the one it gossips on.
func (n *Node) gossipAddrStale() bool {
	m, rec := n.Map(), n.rec.Load()
	if m == nil || rec == nil {
		return false
	}
	nd, ok := m.Node(n.cfg.ID)
	return ok && nd.Incarnation == rec.Incarnation && gossipAddrOf(*nd) != n.gossipAdvertise()
}

// stopGossip leaves the pool (gracefully when leave is set, so the others
// see a departure rather than a failure) and stops gossip.
func (n *Node) stopGossip(leave bool) {
	ml := n.heal.gossip.Load()
	if ml == nil {
		return
	}
	if leave {
		if err := ml.Leave(time.Second); err != nil {
			n.log.Debug("gossip leave", "err", err)
		}
	}
	_ = ml.Close()
}

// gossipLoop records member state changes as events, wakes the controller,
// re-contacts members gossip lost, and forgets members the map dropped.
func (n *Node) gossipLoop(ml *membership.Membership) {
	t := time.NewTicker(rejoinEvery)
	defer t.Stop()
	n.recontact(ml)
	for {
		select {
		case <-n.ctx.Done():
			return
		case ev, ok := <-ml.Events():
			if !ok {
				return
			}
			n.memberEvent(ev)
			n.protocols.observe(n.Map(), ml.Member, n.cfg.ID)
		case <-t.C:
			n.recontact(ml)
			n.protocols.observe(n.Map(), ml.Member, n.cfg.ID)
		}
	}
}

func (n *Node) memberEvent(ev membership.Event) {
	if ev.Member.ID == n.cfg.ID || ev.Old == ev.New {
		return
	}
	kind := map[membership.State]string{
		membership.Alive: EventNodeAlive, membership.Suspect: EventNodeSuspect,
		membership.Dead: EventNodeDead, membership.Left: EventNodeLeft,
	}[ev.New]
	n.heal.events.add(kind, ev.Member.ID, 0, fmt.Sprintf("seen by %s (was %s)", n.cfg.ID, ev.Old))
	n.kickReconcile()
}

// recontact contacts the map's members that gossip does not see alive (and
// the --join targets' gossip ports while it sees no one), and forgets dead
// members that left the map.
func (n *Node) recontact(ml *membership.Membership) {
	m := n.Map()
	if m == nil {
		return
	}
	var addrs []string
	alone := true
	for _, nd := range m.Nodes {
		if nd.ID == n.cfg.ID {
			continue
		}
		mb, ok := ml.Member(nd.ID)
		if ok && (mb.State == membership.Alive || mb.State == membership.Suspect) {
			alone = false
			continue
		}
		addrs = append(addrs, gossipAddrOf(nd))
	}
	if alone {
		for _, j := range n.cfg.Join {
			if a, err := membership.GossipAddr(j); err == nil {
				addrs = append(addrs, a)
			}
		}
	}
	for _, mb := range ml.Members() {
		if _, ok := m.Node(mb.ID); !ok {
			ml.Forget(mb.ID)
		}
	}
	self := ml.Addr()
	addrs = slices.DeleteFunc(addrs, func(a string) bool { return a == "" || a == self })
	if len(addrs) > 0 {
		_, _ = ml.Contact(addrs)
	}
}

// health returns what gossip says about every node of the map, for the
// placement controller. A member gossip never saw counts as alive for a
// grace period after gossip started, then as dead since then.
func (n *Node) health(m *placement.Map) map[string]placement.NodeHealth {
	out := map[string]placement.NodeHealth{}
	ml := n.heal.gossip.Load()
	if ml == nil {
		return out
	}
	now := time.Now()
	grace := min(n.cfg.DeadAfter/2, 5*time.Second)
	for _, nd := range m.Nodes {
		if nd.ID == n.cfg.ID {
			continue
		}
		mb, ok := ml.Member(nd.ID)
		var h placement.NodeHealth
		if quiet, heard := n.heard.silentFor(nd.ID, now); heard && quiet > n.silentAfter() {
			h.Silent = true
		}
		h.DiskFull = ok && mb.Meta.DiskFull
		h.DiskSlow = ok && mb.Meta.DiskSlow
		h.Leaving = ok && mb.Meta.Leaving
		switch {
		case !ok && now.Sub(ml.Started()) < grace:
		case !ok:
			h.State, h.DeadFor = placement.HealthDead, now.Sub(ml.Started())
		case mb.State == membership.Suspect:
			h.State = placement.HealthSuspect
		case mb.State == membership.Dead || mb.State == membership.Left:
			h.State, h.DeadFor = placement.HealthDead, now.Sub(mb.Since)
		}
		if h != (placement.NodeHealth{}) {
			out[nd.ID] = h
		}
	}
	return out
}

// MemberState returns a node's state as this node's gossip sees it:
// alive, suspect, dead, left, or unknown ("" before gossip runs).
func (n *Node) MemberState(id string) string {
	ml := n.heal.gossip.Load()
	if ml == nil {
		return ""
	}
	if id == n.cfg.ID {
		return membership.Alive.String()
	}
	mb, ok := ml.Member(id)
	if !ok {
		return "unknown"
	}
	return mb.State.String()
}

// memberBuild returns the build a node runs and the newest protocol it
// speaks, as it gossips them ("" and 0 when it does not say); for this
// node, its own. For a node gossip does not know, it is "" and the
// protocol gossip last reported of it, remembered across restarts
// (peerprotocol.go), or 0 when never.
func (n *Node) memberBuild(id string) (string, int) {
	if id == n.cfg.ID {
		return compat.Build(), compat.Protocol
	}
	if ml := n.heal.gossip.Load(); ml != nil {
		if mb, ok := ml.Member(id); ok {
			return mb.Meta.Build, mb.Meta.Protocol
		}
	}
	// Gossip does not know it (yet): what it spoke when gossip last did.
	if m := n.Map(); m != nil {
		if nd, ok := m.Node(id); ok {
			return "", n.protocols.recall(*nd)
		}
	}
	return "", 0
}

// Gossip returns the node's gossip membership (nil before it started).
func (n *Node) Gossip() *membership.Membership { return n.heal.gossip.Load() }

// gossipLeaving tells the other nodes, through gossip, that this one is
// shutting down: their placement controller then neither hands it a
// leadership back nor balances one onto it while it hands its own over.
// (Without it, the metadata leader saw a node leading nothing and gave it
// leaderships, which it handed away again, until its time to leave ran
// out.) The update goes out on a goroutine nothing waits for: memberlist
// waits up to 5 s for a member to take it, and a node alone has none.
func (n *Node) gossipLeaving() {
	ml := n.heal.gossip.Load()
	if ml == nil {
		return
	}
	meta := ml.LocalMeta()
	meta.Leaving = true
	go func() {
		if err := ml.UpdateMeta(meta); err != nil {
			n.log.Debug("cannot gossip that this node is leaving", "err", err)
		}
	}()
}

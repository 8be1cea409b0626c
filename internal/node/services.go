package node

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/password"
	"github.com/parley-chat/parley/internal/webhook"
)

// Intervals of the services' background work.
const (
	// linkFlushInterval is how often redirect counts are written; a crash
	// loses at most one interval's counts.
	linkFlushInterval = 2 * time.Second
	// compactInterval is how often the partitions this node leads drop
	// expired room history, unless Config.HistoryCompactInterval says.
	compactInterval = time.Minute
	// compactRounds bounds the compaction proposals of one partition per
	// interval (each removes at most chat.DefaultCompactBudget events).
	compactRounds = 16
)

// services are the product's domain services on this node, all replicating
// through its Router.
type services struct {
	accounts *account.Service
	rooms    *chat.Service
	queues   queueService
	links    *link.Service
	kv       *kv.Service
	// guard decides where outgoing webhooks may point.
	guard *webhook.Guard
}

// newServices builds the domain services from the node's configuration;
// accounts limit sign-in attempts with limits.
func (n *Node) newServices(limits account.Limiter) (*services, error) {
	// One Hasher for accounts and rooms: its bound on concurrent argon2id
	// runs is the node's.
	params := n.hashParams
	if params == (password.Params{}) {
		params = password.DefaultParams()
	}
	hasher, err := password.NewHasher(params, 0)
	if err != nil {
		return nil, err
	}
	accounts, err := account.NewService(n.router, account.Config{
		Registration: account.RegistrationMode(n.cfg.Registration),
		Limiter:      limits,
		SessionTTL:   n.cfg.SessionTTL,
		Hasher:       hasher,
		Now:          n.clock.Now,
		// Token commands wait until every node applies them.
		ClusterProtocol: n.ClusterProtocol,
	})
	if err != nil {
		return nil, fmt.Errorf("accounts: %w", err)
	}
	policy, err := link.ParsePolicy(n.cfg.CachePolicy)
	if err != nil {
		return nil, err
	}
	links, err := link.NewService(n.router, link.Config{
		CacheSize:   n.cfg.CacheSize,
		CachePolicy: policy,
		Logger:      n.log,
		SelfURLs:    n.linkSelfURLs,
		SelfRoots:   n.linkSelfRoots,
		RootURL:     n.cfg.LinksURL,
		Now:         n.clock.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("links: %w", err)
	}
	queues := n.newQueueService(accounts, n.notes.Queues(n.router.PartitionOf))
	guard, err := n.newWebhookGuard()
	if err != nil {
		return nil, err
	}
	chatCfg := n.chatConfig(hasher)
	chatCfg.CheckHookURL = guard.CheckURL
	return &services{
		guard:    guard,
		accounts: accounts,
		rooms:    chat.NewService(n.router, chatCfg),
		queues:   queues,
		links:    links,
		kv:       kv.NewService(n.router, kv.Limits{History: n.cfg.KVHistory}),
	}, nil
}

// chatConfig is the rooms' configuration: the edit window of
// --edit-window, the file limits of --max-file-size and --room-file-quota
// and @here resolved by the presence tracker.
func (n *Node) chatConfig(hasher *password.Hasher) chat.Config {
	// Moderation and hook commands wait until every node applies them.
	cfg := chat.Config{Hasher: hasher, Online: n.presence.Online, ClusterProtocol: n.ClusterProtocol,
		MaxFileSize: n.cfg.MaxFileSize, RoomFileQuota: n.cfg.RoomFileQuota}
	switch w := n.cfg.EditWindow; {
	case w == 0:
		cfg.EditsOff = true
	case w > 0:
		cfg.EditWindow = w
	}
	return cfg
}

// startServices starts the services' background work on goroutines the node
// owns: the redirect count flusher, the queues' work and room history
// compaction. Compaction runs whatever --history-retention says: a room may
// have a retention of its own, and only Compact removes what it expires.
func (n *Node) startServices(s *services) {
	n.goBackground(func() { s.links.RunFlusher(n.ctx, linkFlushInterval) })
	n.goBackground(func() {
		var lastWarn time.Time
		s.accounts.RunTokenUseFlusher(n.ctx, func(err error) {
			if time.Since(lastWarn) >= time.Minute {
				lastWarn = time.Now()
				n.log.Warn("recording API token uses failed; will retry", "err", err)
			}
		})
	})
	n.goBackground(func() { n.presence.Run(n.ctx) })
	n.startQueues(s.queues.Service)
	n.startWebhooks(s.rooms, s.guard)
	n.goBackground(func() {
		n.leaderLoop(kvExpireInterval, "kv expiry", func(_ context.Context, p uint64) error { return n.expirePartition(s.kv, p) })
	})
	every := n.cfg.HistoryCompactInterval
	if every <= 0 {
		every = compactInterval
	}
	n.goBackground(func() { n.compactLoop(s.rooms, every) })
}

// compactLoop drops expired room history (by the cluster's retention and
// each room's own), every interval, in the partitions this node leads (so
// each partition is compacted by one node at a time, and the proposals need
// no forwarding).
func (n *Node) compactLoop(rooms *chat.Service, every time.Duration) {
	n.leaderLoop(every, "room history compaction", func(_ context.Context, p uint64) error {
		return n.compactPartition(rooms, p)
	})
}

// leaderLoop calls fn every interval for each partition this node leads,
// until the node stops, logging its failures (what failed) at most once a
// minute: the background work of a partition that must be done by one node
// at a time and proposes to the partition without forwarding.
func (n *Node) leaderLoop(every time.Duration, what string, fn func(ctx context.Context, p uint64) error) {
	t := time.NewTicker(every)
	defer t.Stop()
	var lastWarn time.Time
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range n.ledPartitions() {
			if err := fn(n.ctx, p); err != nil && n.ctx.Err() == nil && time.Since(lastWarn) >= time.Minute {
				lastWarn = time.Now()
				n.log.Warn(what+" failed; will retry", "partition", p, "err", err)
			}
		}
	}
}

// ledPartitions returns the partitions whose local replica leads.
func (n *Node) ledPartitions() []uint64 {
	var led []uint64
	for _, p := range n.router.Partitions() {
		if _, local := n.engine.Leader(p); local {
			led = append(led, p)
		}
	}
	return led
}

// compactPartition runs compaction rounds on partition p while there is
// more to do, at most compactRounds of them.
func (n *Node) compactPartition(rooms *chat.Service, p uint64) error {
	for range compactRounds {
		ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
		res, err := rooms.Compact(ctx, p, n.cfg.HistoryRetention, 0)
		cancel()
		if err != nil || !res.More {
			return err
		}
	}
	return nil
}

// linkSelfURLs are the bases this cluster serves short links on, which a
// link may not point back at: the public URL and every member's HTTP
// address.
func (n *Node) linkSelfURLs() []string {
	out := []string{n.publicURL()}
	if m := n.Map(); m != nil {
		for _, nd := range m.Nodes {
			if nd.HTTPAddr != "" {
				out = append(out, nd.HTTPAddr)
			}
		}
	}
	return out
}

// linkSelfRoots are the bases where every path is a short link, which a
// link may point nowhere on: the links listeners (--links) of this node
// and of every gossip member that advertises one. A member that is down
// still counts until it is forgotten: its listener loops again when it is
// back.
func (n *Node) linkSelfRoots() []string {
	var out []string
	if a := n.linksAdvertise(); a != "" {
		out = append(out, a)
	}
	if ml := n.heal.gossip.Load(); ml != nil {
		for _, m := range ml.Members() {
			if m.Meta.LinksAddr != "" && m.ID != n.cfg.ID {
				out = append(out, m.Meta.LinksAddr)
			}
		}
	}
	return out
}

// publicURL is the base of short links: --public-url, or the scheme and
// advertised HTTP address of this node.
func (n *Node) publicURL() string {
	if n.cfg.PublicURL != "" {
		return n.cfg.PublicURL
	}
	scheme := "http://"
	if n.cfg.HTTPTLS != nil {
		scheme = "https://"
	}
	if n.cfg.AdvertiseHTTP != "" {
		return scheme + n.cfg.AdvertiseHTTP
	}
	// The configured address names the host as the operator wrote it
	// ("localhost:7070"); the listener knows the port when it was 0.
	host, port, err := net.SplitHostPort(n.cfg.HTTPAddr)
	if ip := net.ParseIP(host); err != nil || port == "0" || host == "" || (ip != nil && ip.IsUnspecified()) {
		_, lnPort, _ := net.SplitHostPort(n.httpLn.Addr().String())
		if host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "localhost"
		}
		return scheme + net.JoinHostPort(host, lnPort)
	}
	return scheme + net.JoinHostPort(host, port)
}

package node

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/metrics"
	"github.com/parley-chat/parley/internal/web"
)

// startHTTP builds the domain services, starts their background work and
// serves the API on the configured HTTP address.
func (n *Node) startHTTP() error {
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen for HTTP on %s: %w", n.cfg.HTTPAddr, err)
	}
	n.conns = n.newConnLimiter()
	ln = n.conns.Listen(ln)
	n.httpLn = ln
	if err := n.listenLinks(); err != nil {
		_ = ln.Close()
		return err
	}
	n.metrics = n.newMetrics()
	n.metrics.RegisterStreams(n.streamStats)
	n.metrics.RegisterConns(n.connStats)
	n.metrics.RegisterSearch(n.searchStats)
	limits := n.newLimiter()
	n.limits.Store(limits)
	svc, err := n.newServices(limits)
	if err != nil {
		_ = ln.Close()
		if n.links.ln != nil {
			_ = n.links.ln.Close()
		}
		return err
	}
	n.startAudit()
	srv := api.New(api.Config{
		KV:              svc.kv,
		Status:          n,
		Accounts:        svc.accounts,
		Rooms:           n.apiRooms(svc),
		Export:          svc.rooms,
		Hooks:           svc.rooms,
		Files:           svc.rooms,
		Search:          n.searcher,
		Presence:        n.presence,
		Queues:          svc.queues,
		Links:           svc.links,
		PublicURL:       n.publicURL(),
		LinksURL:        n.cfg.LinksURL,
		Logger:          n.log,
		MaxText:         svc.rooms.Config().MaxText,
		MaxQueueBody:    svc.queues.Limits().MaxBody,
		MaxURL:          svc.links.Config().MaxURL,
		Limiter:         limits,
		Observe:         n.observeHTTP,
		Streams:         streamService{hub: n.feeds.Hub(), router: n.router, typing: n.broadcastTyping},
		KVWatch:         kvWatch{kv: svc.kv, feeds: n.kvFeeds},
		StreamOrigins:   n.streamOrigins,
		StreamConnected: n.presence.Connected,
		Admin:           n,
		Tokens:          n,
		APITokens:       svc.accounts,
		Audit:           n.Audit(),
		AuditSource:     n,
	})
	n.startServices(svc)
	n.goBackground(func() { limits.run(n.ctx) })
	n.wireOps(svc)
	root := http.NewServeMux()
	root.Handle("GET /metrics", n.metrics.Handler()) // open, like /healthz
	root.Handle("/", web.WithAPI(srv.Handler(), web.Options{Origins: n.streamOrigins}))
	n.httpSrv = &http.Server{
		Handler:           srv.Redirects(root), // redirects first: the most frequent request
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		TLSConfig:         n.cfg.HTTPTLS,
	}
	n.serveLinks(srv)
	n.goBackground(func() {
		var err error
		if n.cfg.HTTPTLS != nil {
			err = n.httpSrv.ServeTLS(ln, "", "")
		} else {
			err = n.httpSrv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("HTTP server stopped", "err", err)
		}
	})
	return nil
}

// newMetrics builds the node's Prometheus registry over its engine and
// transport counters.
func (n *Node) newMetrics() *metrics.Metrics {
	return metrics.New(metrics.Source{
		Engine: func() metrics.EngineStats {
			s := n.engine.Stats()
			return metrics.EngineStats{
				Rounds: s.Rounds.Load(), Syncs: s.Syncs.Load(), EntriesApplied: s.EntriesApplied.Load(),
				ProposalsDropped: s.ProposalsDropped.Load(), CommitNanos: s.CommitNanos.Load(), SyncNanos: s.SyncNanos.Load(),
				RoundPauses: s.RoundPauses.Load(),
			}
		},
		Transport: func() metrics.TransportStats {
			s := n.tr.Stats()
			return metrics.TransportStats{
				RaftSent: s.RaftSent, RaftDropped: s.RaftDropped, RaftReceived: s.RaftReceived,
				BytesSent: s.BytesSent, BytesReceived: s.BytesReceived, CallsSent: s.CallsSent, CallsFailed: s.CallsFailed,
				SnapshotsSent: s.SnapshotsSent, SnapshotsReceived: s.SnapshotsReceived,
			}
		},
		Storage:         n.storageStats, // perf.go
		ClusterEvents:   n.heal.events.Counts,
		UnderReplicated: n.localUnderReplicated,
		Applied: func() map[uint64]uint64 {
			out := map[uint64]uint64{}
			for _, g := range n.engine.Groups() {
				out[g] = n.engine.Applied(g)
			}
			return out
		},
	})
}

// httpAdvertise is the HTTP address recorded in the cluster map.
func (n *Node) httpAdvertise() string {
	if n.cfg.AdvertiseHTTP != "" {
		return n.cfg.AdvertiseHTTP
	}
	return n.httpLn.Addr().String()
}

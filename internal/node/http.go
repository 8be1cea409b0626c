package node

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/api"
)

// startHTTP builds the domain services, starts their background work and
// serves the API on the configured HTTP address.
func (n *Node) startHTTP() error {
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen for HTTP on %s: %w", n.cfg.HTTPAddr, err)
	}
	n.httpLn = ln
	svc, err := n.newServices()
	if err != nil {
		_ = ln.Close()
		return err
	}
	srv := api.New(api.Config{
		KV:             svc.kv,
		Status:         n,
		Accounts:       svc.accounts,
		Rooms:          svc.rooms,
		Queues:         svc.queues,
		Links:          svc.links,
		PublicURL:      n.publicURL(),
		Logger:         n.log,
		MaxText:        svc.rooms.Config().MaxText,
		MaxQueueBody:   svc.queues.Limits().MaxBody,
		MaxURL:         svc.links.Config().MaxURL,
		LoginRateLimit: n.cfg.RateLimit,
	})
	n.startServices(svc)
	n.httpSrv = &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		TLSConfig:         n.cfg.HTTPTLS,
	}
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

// httpAdvertise is the HTTP address recorded in the cluster map.
func (n *Node) httpAdvertise() string {
	if n.cfg.AdvertiseHTTP != "" {
		return n.cfg.AdvertiseHTTP
	}
	return n.httpLn.Addr().String()
}

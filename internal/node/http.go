package node

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/kv"
)

// startHTTP serves the API on the configured HTTP address.
func (n *Node) startHTTP() error {
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen for HTTP on %s: %w", n.cfg.HTTPAddr, err)
	}
	n.httpLn = ln
	srv := api.New(api.Config{
		KV:     kv.NewService(n.router, kv.Limits{}),
		Status: n,
		Logger: n.log,
	})
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

package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/parley-chat/parley/internal/api"
)

// linksListener is the links listener and its server; both nil when
// short links are not served apart.
type linksListener struct {
	ln  net.Listener
	srv *fasthttp.Server
}

// listenLinks opens the links listener (--links), when set, behind TLS
// when the API is; serveLinks serves it.
func (n *Node) listenLinks() error {
	if n.cfg.LinksAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", n.cfg.LinksAddr)
	if err != nil {
		return fmt.Errorf("listen for short links on %s: %w", n.cfg.LinksAddr, err)
	}
	ln = n.conns.Listen(ln) // counted with the API's, before any TLS handshake
	if n.cfg.HTTPTLS != nil {
		cfg := n.cfg.HTTPTLS.Clone()
		cfg.NextProtos = []string{"http/1.1"} // fasthttp speaks no HTTP/2
		ln = tls.NewListener(ln, cfg)
	}
	n.links.ln = ln
	return nil
}

// serveLinks serves short links alone on the links listener: srv's
// LinksHandler on a fasthttp server. A link request has no body and small
// headers, and the limits say so.
func (n *Node) serveLinks(srv *api.Server) {
	if n.links.ln == nil {
		return
	}
	n.links.srv = &fasthttp.Server{
		Handler:               srv.LinksHandler(n.ctx),
		ReadTimeout:           10 * time.Second, // the request line and headers: there is no body
		WriteTimeout:          60 * time.Second,
		IdleTimeout:           120 * time.Second,
		ReadBufferSize:        8 << 10, // the largest request head taken (431 past it), as nginx and Apache
		MaxRequestBodySize:    4 << 10,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		CloseOnShutdown:       true,
		Logger:                fasthttpLogger{n},
	}
	ln := n.links.ln
	fs := n.links.srv
	n.goBackground(func() {
		if err := fs.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
			n.log.Error("short-link server stopped", "err", err)
		}
	})
}

// stopLinks closes the links listener and its connections, waiting for
// the requests being answered until ctx is done. The listener is closed
// here too: a Shutdown that runs before Serve has taken it would leave it
// accepting.
func (n *Node) stopLinks(ctx context.Context) {
	if n.links.srv != nil {
		_ = n.links.srv.ShutdownWithContext(ctx)
	}
	if n.links.ln != nil {
		_ = n.links.ln.Close()
	}
}

// LinksAddr returns the address short links are served at alone (--links),
// or "" when they are not.
func (n *Node) LinksAddr() string {
	if n.links.ln == nil {
		return ""
	}
	return n.links.ln.Addr().String()
}

// linksAdvertise returns the address other nodes and the links' loop
// check know this node's links listener by, as gossiped in its
// membership.Meta: the listener's actual address (so --links with port 0
// gives the port picked), with the host of the advertised HTTP address
// (httpAdvertise) in place of an unspecified one (":8080", "0.0.0.0:8080",
// "[::]:8080"). It is "" when there is no links listener.
func (n *Node) linksAdvertise() string {
	addr := n.LinksAddr()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "" // no links listener
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return addr
	}
	httpHost, _, err := net.SplitHostPort(n.httpAdvertise())
	if err != nil {
		return addr
	}
	return net.JoinHostPort(httpHost, port)
}

// fasthttpLogger takes fasthttp's messages (a connection that failed, a
// request it could not parse) at debug level: a client's fault, not the
// node's.
type fasthttpLogger struct{ n *Node }

// Printf implements fasthttp.Logger.
func (l fasthttpLogger) Printf(format string, args ...any) {
	l.n.log.Debug("short-link server: " + fmt.Sprintf(format, args...))
}

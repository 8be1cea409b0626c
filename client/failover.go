package client

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// WithFallbacks names other servers of the same cluster (base URLs) that
// the Client turns to, in order, when it cannot connect to the one it
// uses: a request whose connection could not be made never reached a
// server, so it is sent to the next whatever its method. The server that
// answered is used from then on. Requests that did reach a server are never
// sent again here (retries are the caller's, with an idempotency key), and
// neither is a request whose body cannot be read twice. Pool ignores
// fallbacks: it routes by each Client's first server.
func WithFallbacks(baseURLs ...string) Option {
	return func(c *Client) {
		for _, u := range baseURLs {
			u = strings.TrimRight(u, "/")
			if u != "" && !slices.Contains(c.bases, u) {
				c.bases = append(c.bases, u)
			}
		}
	}
}

// current is the base URL the Client sends to now.
func (c *Client) current() string {
	return c.bases[int(c.cur.Load())%len(c.bases)]
}

// Server returns the base URL the Client sends to now: its first server,
// or the fallback it moved to.
func (c *Client) Server() string { return c.current() }

// baseOf is the server of the Client that u is on (the longest base URL
// that starts it), or "" for none.
func (c *Client) baseOf(u string) string {
	best := ""
	for _, b := range c.bases {
		if len(b) > len(best) && strings.HasPrefix(u, b) && (len(u) == len(b) || u[len(b)] == '/' || u[len(b)] == '?') {
			best = b
		}
	}
	return best
}

// sendFailover sends req (built on base) and, while the connection cannot
// be made, the same request to each other server in turn. It returns the
// last answer or error.
func (c *Client) sendFailover(req *http.Request, base string) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err == nil || len(c.bases) == 1 || base == "" || !isDialError(err) || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		return resp, err
	}
	at := int32(slices.Index(c.bases, base))
	for i := 1; i < len(c.bases); i++ {
		next := (int(at) + i) % len(c.bases)
		r, rerr := rebase(req, base, c.bases[next])
		if rerr != nil {
			return nil, err
		}
		resp, err = c.hc.Do(r)
		if err == nil || !isDialError(err) {
			c.cur.CompareAndSwap(at, int32(next))
			return resp, err
		}
	}
	return nil, err
}

// rebase copies req with its URL moved from base to other and a fresh body.
func rebase(req *http.Request, base, other string) (*http.Request, error) {
	u, err := url.Parse(other + strings.TrimPrefix(req.URL.String(), base))
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.URL, r.Host = u, ""
	if req.GetBody != nil {
		if r.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// isDialError reports whether err is a failure to connect (refused, no
// route, a name that does not resolve, a dial timeout): the request was not
// sent.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

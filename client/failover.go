package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// WithFallbacks names other servers of the same cluster (base URLs) that
// the Client turns to, in order, when the one it uses fails it:
//   - a request whose connection could not be made never reached a server,
//     so it is sent to the next whatever its method;
//   - a request that may be sent again — a GET or HEAD, or a write carrying
//     an Idempotency-Key, which the cluster applies once through any node —
//     is also sent to the next when its connection broke before an answer
//     came (a node killed mid-request) or, with WithAttemptTimeout, when no
//     answer came in time (a node that accepts and then hangs).
//
// The server that answered is used from then on. Other requests that
// reached a server are never sent again here (retries are the caller's,
// with an idempotency key), and neither is a request whose body cannot be
// read twice. Pool ignores fallbacks: it routes by each Client's first
// server.
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

// WithAttemptTimeout makes the Client check on a server that has not
// started its answer (its response headers) within d to a request that may
// be sent again (see WithFallbacks), while it has fallbacks left to try: a
// server that answers GET /healthz within d is waited for (and checked
// again every d), one that does not is left and the request sent to the
// next. A server that has not even taken the connection within d (an
// address that drops packets: a stopped pod's) is left at once, unasked.
// A queue receive that long-polls gets its wait on top of the first d.
// Zero, the default, waits as long as the request's context allows.
func WithAttemptTimeout(d time.Duration) Option {
	return func(c *Client) { c.attemptTimeout = d }
}

// errNoAnswer is the cause of an attempt abandoned by WithAttemptTimeout.
var errNoAnswer = errors.New("no answer in time")

// errNoConnection is the cause of an attempt abandoned by
// WithAttemptTimeout before its connection was made.
var errNoConnection = errors.New("no connection")

type attemptExtraKey struct{}

// withAttemptExtra returns a context whose requests may take d longer than
// the attempt timeout: a long poll's own wait.
func withAttemptExtra(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, attemptExtraKey{}, d)
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

// sendFailover sends req (built on base) and, while it fails in a way that
// lets it move (see WithFallbacks), the same request to each other server
// in turn. It returns the last answer or error.
func (c *Client) sendFailover(req *http.Request, base string) (*http.Response, error) {
	if len(c.bases) == 1 || base == "" || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		return c.hc.Do(req)
	}
	again := resendable(req)
	resp, err := c.attempt(req, base, again)
	if !c.mayMove(req, again, err) {
		return resp, err
	}
	at := int32(slices.Index(c.bases, base))
	for i := 1; i < len(c.bases); i++ {
		next := (int(at) + i) % len(c.bases)
		r, rerr := rebase(req, base, c.bases[next])
		if rerr != nil {
			return nil, err
		}
		resp, err = c.attempt(r, c.bases[next], again && i < len(c.bases)-1)
		if !c.mayMove(req, again, err) {
			c.cur.CompareAndSwap(at, int32(next))
			return resp, err
		}
	}
	return nil, err
}

// resendable reports whether req may reach a server twice: a GET or HEAD
// changes nothing, and a write with an Idempotency-Key is applied once.
func resendable(req *http.Request) bool {
	return req.Method == http.MethodGet || req.Method == http.MethodHead || req.Header.Get("Idempotency-Key") != ""
}

// mayMove reports whether a request that failed with err may go to the
// next server: it never reached this one, or it may be sent again and
// this one gave no answer while the caller still waits.
func (c *Client) mayMove(req *http.Request, again bool, err error) bool {
	if err == nil {
		return false
	}
	return isDialError(err) || again && req.Context().Err() == nil
}

// attempt sends req to base. With an attempt timeout and limited set, a
// server that has not started its answer within the timeout (plus a long
// poll's wait) is asked whether it is alive (GET /healthz, within the
// timeout): a server that says so is waited for again, one that does not is
// abandoned with errNoAnswer. A slow request on a live node is not sent
// twice; a node that accepts connections and then hangs is left. A server
// whose connection was not made by then is abandoned with errNoConnection
// without the question: its probe would wait on the same dead address.
func (c *Client) attempt(req *http.Request, base string, limited bool) (*http.Response, error) {
	if c.attemptTimeout <= 0 || !limited {
		return c.hc.Do(req)
	}
	d := c.attemptTimeout
	if extra, ok := req.Context().Value(attemptExtraKey{}).(time.Duration); ok {
		d += extra
	}
	var connected atomic.Bool
	ctx, cancel := context.WithCancelCause(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
	}))
	type answer struct {
		resp *http.Response
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := c.hc.Do(req.WithContext(ctx))
		got <- answer{resp, err}
	}()
	take := func(a answer) (*http.Response, error) {
		if a.err != nil {
			cancel(nil)
			return nil, a.err
		}
		a.resp.Body = &cancelOnClose{ReadCloser: a.resp.Body, cancel: cancel}
		return a.resp, nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case a := <-got:
			return take(a)
		case <-timer.C:
			why := errNoAnswer
			if !connected.Load() {
				why = errNoConnection
			} else if c.alive(req.Context(), base) {
				timer.Reset(c.attemptTimeout)
				continue
			}
			select {
			case a := <-got: // the answer came while the probe waited
				return take(a)
			default:
			}
			cancel(why)
			if a := <-got; a.err == nil {
				a.resp.Body.Close() // came as it was abandoned: its context is gone
			}
			if err := req.Context().Err(); err != nil {
				return nil, err
			}
			if why == errNoConnection {
				return nil, fmt.Errorf("%s: %w within %s", req.URL.Host, errNoConnection, d)
			}
			return nil, fmt.Errorf("%s: %w within %s, nor to GET /healthz", req.URL.Host, errNoAnswer, d)
		}
	}
}

// alive reports whether base answers GET /healthz within the attempt
// timeout.
func (c *Client) alive(ctx context.Context, base string) bool {
	ctx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10))
	resp.Body.Close()
	return resp.StatusCode/100 == 2
}

// cancelOnClose ends an attempt's context when its answer's body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
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

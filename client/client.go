// Package client is the Go client for Parley's HTTP API v1.
//
//	c := client.New("http://localhost:7070")
//	if _, err := c.Login(ctx, "alice", "correct horse"); err != nil { ... } // keeps the token
//	v, err := c.KVPut(ctx, "greeting", []byte("hello"), client.PutOptions{IdempotencyKey: "req-1"})
//	if client.IsRetryable(err) { /* send the same request again */ }
//
// Every write may carry an idempotency key: a context made with
// WithIdempotencyKey sends it, so a retry with the same key is applied once.
// Times are Unix milliseconds, as on the wire. Failed calls return an *Error
// carrying the server's status and error code, or a wrapped transport error.
// A Client is safe for concurrent use.
//
// A Client talks to one server, which forwards what it does not lead;
// WithFallbacks names others it turns to when that one fails it (cannot be
// reached; for a request that may be sent again, also a broken connection
// or, with WithAttemptTimeout, no answer in time). A
// Pool of one Client per server sends each kv or queue request to the
// server leading its partition instead, saving that hop:
//
//	pool := client.NewPool(c1, c2, c3)
//	_, err := pool.ForKV("greeting", c1).KVPut(ctx, "greeting", v, client.PutOptions{})
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client calls one Parley server (any node of a cluster), or the next of
// its fallbacks when that one fails it (WithFallbacks).
type Client struct {
	bases          []string // the first server (what a Pool routes by), then WithFallbacks'
	cur            atomic.Int32
	hc             *http.Client
	attemptTimeout time.Duration // WithAttemptTimeout

	mu    sync.RWMutex
	token string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the Client send requests through hc (timeouts, TLS,
// transports). The default is http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.hc = hc }
}

// WithToken sends "Authorization: Bearer token" with every request.
func WithToken(token string) Option {
	return func(c *Client) { c.token = token }
}

// New returns a Client for the server at baseURL, e.g.
// "http://localhost:7070"; a trailing slash is ignored.
func New(baseURL string, opts ...Option) *Client {
	c := &Client{bases: []string{strings.TrimRight(baseURL, "/")}, hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Token returns the bearer token the Client sends ("" when none).
func (c *Client) Token() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.token
}

// SetToken makes the Client send "Authorization: Bearer token" ("" stops).
func (c *Client) SetToken(token string) {
	c.mu.Lock()
	c.token = token
	c.mu.Unlock()
}

type idempotencyKey struct{}

// WithIdempotencyKey returns a context whose writes carry key as their
// Idempotency-Key: a retry with the same key, by the same user, within the
// server's dedup window is applied once and returns the first result; the
// same key with a different request (method, path, query, preconditions or
// body) fails with an *Error of status 422, code "idempotency_key_reused".
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, key)
}

// Healthz returns nil when the server process is alive.
func (c *Client) Healthz(ctx context.Context) error {
	return c.expectOK(ctx, "/healthz")
}

// Readyz returns nil when the server can serve requests, an *Error with
// status 503 while it cannot.
func (c *Client) Readyz(ctx context.Context) error {
	return c.expectOK(ctx, "/readyz")
}

func (c *Client) expectOK(ctx context.Context, path string) error {
	resp, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return err
	}
	return drain(resp)
}

// do sends a request and returns the response when its status is 2xx, else
// the decoded *Error. header may be nil.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader, header http.Header) (*http.Response, error) {
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	return c.send(req, header)
}

// newRequest builds a request for path on the server the Client uses now.
func (c *Client) newRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.current()+path, body)
	if err != nil {
		return nil, fmt.Errorf("parley: %s %s: %w", method, path, err)
	}
	return req, nil
}

// send is do for a request built by the caller with newRequest.
func (c *Client) send(req *http.Request, header http.Header) (*http.Response, error) {
	base := c.baseOf(req.URL.String())
	ctx, method, path := req.Context(), req.Method, strings.TrimPrefix(req.URL.String(), base)
	for k, vs := range header {
		req.Header[k] = vs
	}
	if key, _ := ctx.Value(idempotencyKey{}).(string); key != "" && req.Header.Get("Idempotency-Key") == "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if token := c.Token(); token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.sendFailover(req, base)
	if err != nil {
		return nil, fmt.Errorf("parley: %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// getJSON sends a GET and decodes the JSON response into out.
func (c *Client) getJSON(ctx context.Context, path string, q url.Values, out any) (http.Header, error) {
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	resp, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, fmt.Errorf("parley: GET %s: decoding response: %w", path, err)
	}
	return resp.Header, nil
}

// sendJSON sends in (nil: no body) as JSON and decodes a JSON response into
// out (nil: the body is discarded). It returns the response status.
func (c *Client) sendJSON(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	var h http.Header
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("parley: %s %s: encoding request: %w", method, path, err)
		}
		body, h = bytes.NewReader(b), http.Header{"Content-Type": {"application/json"}}
	}
	resp, err := c.do(ctx, method, path, body, h)
	if err != nil {
		return 0, err
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return resp.StatusCode, drain(resp)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return 0, fmt.Errorf("parley: %s %s: decoding response: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

// drain reads and closes a response body so the connection can be reused.
func drain(resp *http.Response) error {
	defer resp.Body.Close()
	_, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return fmt.Errorf("parley: reading response: %w", err)
	}
	return nil
}

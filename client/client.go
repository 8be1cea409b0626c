// Package client is the Go client for Parley's HTTP API v1.
//
//	c := client.New("http://localhost:7070", client.WithToken(token))
//	v, err := c.KVPut(ctx, "greeting", []byte("hello"), client.PutOptions{IdempotencyKey: "req-1"})
//	if client.IsRetryable(err) { /* send the same request again */ }
//
// Failed calls return an *Error carrying the server's status and error code,
// or a wrapped transport error. A Client is safe for concurrent use.
package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client calls one Parley server (any node of a cluster).
type Client struct {
	base  string
	hc    *http.Client
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
	c := &Client{base: strings.TrimRight(baseURL, "/"), hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c
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
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("parley: %s %s: %w", method, path, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
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

// drain reads and closes a response body so the connection can be reused.
func drain(resp *http.Response) error {
	defer resp.Body.Close()
	_, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return fmt.Errorf("parley: reading response: %w", err)
	}
	return nil
}

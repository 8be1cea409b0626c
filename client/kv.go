package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// PutOptions qualify KVPut.
type PutOptions struct {
	// IfVersion, when not 0, makes the put a compare-and-swap: it applies
	// only if the key's current version is IfVersion, else the call fails
	// with an *Error of status 412.
	IfVersion uint64
	// IfAbsent makes the put apply only if the key does not exist (412
	// otherwise). It excludes IfVersion.
	IfAbsent bool
	// IdempotencyKey makes retries of this put apply once: a retry with the
	// same key within the server's dedup window returns the first result.
	IdempotencyKey string
}

// GetOptions qualify KVGet.
type GetOptions struct {
	// Stale reads the nearest replica instead of a linearizable read: faster,
	// possibly behind the latest write.
	Stale bool
}

// DeleteOptions qualify KVDelete.
type DeleteOptions struct {
	// IfVersion, when not 0, deletes only if the key's current version is
	// IfVersion (412 otherwise).
	IfVersion uint64
	// IdempotencyKey works as in PutOptions.
	IdempotencyKey string
}

// KVKey describes one key in a KVList result.
type KVKey struct {
	Key        string `json:"key"`
	Version    uint64 `json:"version"`
	Size       int    `json:"size"`
	ModifiedMs int64  `json:"modified_ms"`
}

// KVPut stores value under key and returns the key's new version (1 when it
// was created).
func (c *Client) KVPut(ctx context.Context, key string, value []byte, opts PutOptions) (uint64, error) {
	h := http.Header{}
	if opts.IfVersion != 0 {
		h.Set("If-Match", strconv.FormatUint(opts.IfVersion, 10))
	}
	if opts.IfAbsent {
		h.Set("If-None-Match", "*")
	}
	if opts.IdempotencyKey != "" {
		h.Set("Idempotency-Key", opts.IdempotencyKey)
	}
	resp, err := c.do(ctx, http.MethodPut, kvPath(key), bytes.NewReader(value), h)
	if err != nil {
		return 0, err
	}
	if err := drain(resp); err != nil {
		return 0, err
	}
	return versionOf(resp)
}

// KVGet returns the value stored under key and its version. A missing key is
// an *Error with status 404.
func (c *Client) KVGet(ctx context.Context, key string, opts GetOptions) ([]byte, uint64, error) {
	path := kvPath(key)
	if opts.Stale {
		path += "?consistency=stale"
	}
	resp, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	value, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("parley: GET %s: reading value: %w", path, err)
	}
	v, err := versionOf(resp)
	if err != nil {
		return nil, 0, err
	}
	return value, v, nil
}

// KVDelete removes key. A missing key is an *Error with status 404.
func (c *Client) KVDelete(ctx context.Context, key string, opts DeleteOptions) error {
	h := http.Header{}
	if opts.IfVersion != 0 {
		h.Set("If-Match", strconv.FormatUint(opts.IfVersion, 10))
	}
	if opts.IdempotencyKey != "" {
		h.Set("Idempotency-Key", opts.IdempotencyKey)
	}
	resp, err := c.do(ctx, http.MethodDelete, kvPath(key), nil, h)
	if err != nil {
		return err
	}
	return drain(resp)
}

// KVList returns up to limit keys (0: the server's default) that start with
// prefix and sort after after, across the whole cluster in byte order. Page
// through a large listing by passing the last key returned as after.
func (c *Client) KVList(ctx context.Context, prefix, after string, limit int) ([]KVKey, error) {
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if after != "" {
		q.Set("after", after)
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Keys []KVKey `json:"keys"`
	}
	if _, err := c.getJSON(ctx, "/api/v1/kv", q, &out); err != nil {
		return nil, err
	}
	return out.Keys, nil
}

// kvPath is the URL path of key. Every byte that is not safe in one path
// segment is escaped, "/" included, so keys such as "a/../b" reach the
// server unchanged.
func kvPath(key string) string {
	return "/api/v1/kv/" + url.PathEscape(key)
}

// versionOf reads the X-Parley-Version header of a kv response.
func versionOf(resp *http.Response) (uint64, error) {
	s := resp.Header.Get("X-Parley-Version")
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parley: %s %s: bad X-Parley-Version %q", resp.Request.Method, resp.Request.URL.Path, s)
	}
	return v, nil
}

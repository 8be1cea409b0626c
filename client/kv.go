package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
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
	// same key within the server's dedup window returns the first result,
	// and another request with the same key fails with status 422.
	IdempotencyKey string
	// TTL, when not 0, makes the key expire after it (at least a second),
	// by the partition leader's clock. It excludes Lease.
	TTL time.Duration
	// Lease, when not 0, attaches the key to a lease (LeaseGrant): the key
	// is deleted when the lease expires or is revoked.
	Lease uint64
}

// GetOptions qualify KVGet and KVGetItem.
type GetOptions struct {
	// Stale reads the nearest replica instead of a linearizable read: faster,
	// possibly behind the latest write.
	Stale bool
	// Revision, when not 0, reads the value the key had at this revision of
	// its partition (412-free: 404 when it did not exist then, 410
	// history_compacted when that version is no longer kept).
	Revision uint64
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
	Revision   uint64 `json:"revision,omitempty"`
	ExpiresMs  int64  `json:"expires_ms,omitempty"`
	Lease      uint64 `json:"lease,omitempty"`
}

// KVPut stores value under key and returns the key's new version (1 when it
// was created).
func (c *Client) KVPut(ctx context.Context, key string, value []byte, opts PutOptions) (uint64, error) {
	w, err := c.KVWrite(ctx, key, value, opts)
	return w.Version, err
}

// KVWritten is the outcome of KVWrite: the key's new version and the
// revision of its partition that the put made.
type KVWritten struct {
	Version  uint64
	Revision uint64
}

// KVWrite is KVPut that also returns the put's revision.
func (c *Client) KVWrite(ctx context.Context, key string, value []byte, opts PutOptions) (KVWritten, error) {
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
	q := url.Values{}
	if opts.TTL != 0 {
		q.Set("ttl", opts.TTL.String())
	}
	if opts.Lease != 0 {
		q.Set("lease", strconv.FormatUint(opts.Lease, 10))
	}
	path := kvPath(key)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	resp, err := c.do(ctx, http.MethodPut, path, bytes.NewReader(value), h)
	if err != nil {
		return KVWritten{}, err
	}
	if err := drain(resp); err != nil {
		return KVWritten{}, err
	}
	v, err := versionOf(resp)
	if err != nil {
		return KVWritten{}, err
	}
	rev, _ := strconv.ParseUint(resp.Header.Get("X-Parley-Revision"), 10, 64)
	return KVWritten{Version: v, Revision: rev}, nil
}

// KVGet returns the value stored under key and its version. A missing key is
// an *Error with status 404.
func (c *Client) KVGet(ctx context.Context, key string, opts GetOptions) ([]byte, uint64, error) {
	it, err := c.KVGetItem(ctx, key, opts)
	return it.Value, it.Version, err
}

// KVItem is a value with its metadata.
type KVItem struct {
	Value    []byte
	Version  uint64
	Revision uint64 // the partition revision of the last put
	// ModifiedMs is the leader-stamped time of the last put; ExpiresMs
	// when its TTL runs out (0: none); Lease the lease it is attached to.
	ModifiedMs int64
	ExpiresMs  int64
	Lease      uint64
}

// KVGetItem is KVGet returning the value's metadata too.
func (c *Client) KVGetItem(ctx context.Context, key string, opts GetOptions) (KVItem, error) {
	q := url.Values{}
	if opts.Stale {
		q.Set("consistency", "stale")
	}
	if opts.Revision != 0 {
		q.Set("revision", strconv.FormatUint(opts.Revision, 10))
	}
	path := kvPath(key)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	resp, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return KVItem{}, err
	}
	defer resp.Body.Close()
	value, err := io.ReadAll(resp.Body)
	if err != nil {
		return KVItem{}, fmt.Errorf("parley: GET %s: reading value: %w", path, err)
	}
	v, err := versionOf(resp)
	if err != nil {
		return KVItem{}, err
	}
	it := KVItem{Value: value, Version: v}
	h := resp.Header
	it.Revision, _ = strconv.ParseUint(h.Get("X-Parley-Revision"), 10, 64)
	it.ModifiedMs, _ = strconv.ParseInt(h.Get("X-Parley-Modified-Ms"), 10, 64)
	it.ExpiresMs, _ = strconv.ParseInt(h.Get("X-Parley-Expires-Ms"), 10, 64)
	it.Lease, _ = strconv.ParseUint(h.Get("X-Parley-Lease"), 10, 64)
	return it, nil
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

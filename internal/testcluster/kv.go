package testcluster

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

// Retryable reports whether a client would retry err: a retryable API
// error (503 and the like), a request that ran out of time, or a connection
// that failed (a node killed or not yet listening).
var Retryable = client.IsRetryableAttempt

// MustPut puts key=value through c, retrying what a client retries for up
// to 20 s under one idempotency key (opts' own, or a fresh one), so a retry
// never applies the put twice; it fails t on any other error.
func MustPut(t testing.TB, c *client.Client, key, value string, opts client.PutOptions) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if opts.IdempotencyKey == "" {
		opts.IdempotencyKey = fmt.Sprintf("MustPut-%d", putSeq.Add(1))
	}
	for {
		v, err := c.KVPut(ctx, key, []byte(value), opts)
		if err == nil {
			return v
		}
		if !Retryable(err) || ctx.Err() != nil {
			t.Fatalf("put %s: %v", key, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// putSeq numbers MustPut's idempotency keys.
var putSeq atomic.Int64

// MustGet reads key through c (20 s at most) and returns its value and
// version; it fails t on an error.
func MustGet(t testing.TB, c *client.Client, key string, opts client.GetOptions) (string, uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, ver, err := c.KVGet(ctx, key, opts)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return string(v), ver
}

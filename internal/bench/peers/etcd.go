package peers

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/parley-chat/parley/internal/bench"
)

// EtcdKV is the KV workload against etcd 3.4's JSON gRPC gateway: the same
// keys, values and choice of operation as KV, sent as HTTP/1.1 JSON, where
// keys and values are base64. A put is etcd's durable, replicated write; a
// get is a linearizable range read of one key (etcd's default). It exists to
// compare Parley with etcd like for like, on the same machine in the same
// run.
type EtcdKV struct {
	o       bench.EtcdKVOptions
	value64 []byte // the value, base64-encoded once
}

// Compile-time checks that EtcdKV is a workload that prepares.
var (
	_ bench.Workload = (*EtcdKV)(nil)
	_ bench.Preparer = (*EtcdKV)(nil)
)

// Gateway paths: etcd 3.4 serves its gRPC gateway under /v3 on every
// client URL (/v3beta is the deprecated alias).
const (
	etcdPutPath   = "/v3/kv/put"
	etcdRangePath = "/v3/kv/range"
	etcdHealth    = "/health"
)

// maxExcerpt bounds the part of an error response quoted in an error.
const maxExcerpt = 200

// NewEtcdKV checks o and returns the workload.
func NewEtcdKV(o bench.EtcdKVOptions) (*EtcdKV, error) {
	switch {
	case len(o.Endpoints) == 0:
		return nil, errors.New("etcd kv workload: no endpoints")
	case o.HTTP == nil:
		return nil, errors.New("etcd kv workload: no HTTP client")
	case o.Mix != bench.MixPut && o.Mix != bench.MixGet && o.Mix != bench.MixMixed:
		return nil, fmt.Errorf("etcd kv workload: mix %q: want put, get or mixed", o.Mix)
	case o.ValueSize < 0:
		return nil, fmt.Errorf("etcd kv workload: value size %d: must not be negative", o.ValueSize)
	case o.Keys < 1:
		return nil, fmt.Errorf("etcd kv workload: keys %d: want at least 1", o.Keys)
	}
	eps := make([]string, len(o.Endpoints))
	for i, e := range o.Endpoints {
		eps[i] = strings.TrimRight(e, "/")
	}
	o.Endpoints = eps
	return &EtcdKV{o: o, value64: base64.StdEncoding.AppendEncode(nil, bench.KVValue(o.ValueSize))}, nil
}

// Name implements bench.Workload: "etcd-kv/put", "etcd-kv/get" or
// "etcd-kv/mixed".
func (e *EtcdKV) Name() string { return "etcd-kv/" + e.o.Mix }

// Op implements bench.Workload, choosing key and operation from i exactly as KV
// does.
func (e *EtcdKV) Op(ctx context.Context, worker, i int) error {
	ep := e.o.Endpoints[worker%len(e.o.Endpoints)]
	n, put := bench.KVOp(e.o.Mix, e.o.Keys, i)
	key := e.key(n)
	if put {
		return e.post(ctx, "put", ep+etcdPutPath, e.putBody(key))
	}
	// A range over a missing key answers 200 with no kvs: still a read.
	return e.post(ctx, "get", ep+etcdRangePath, e.rangeBody(key))
}

// Prepare implements bench.Preparer: for reads, every key of the keyspace is
// stored once, by workers goroutines.
func (e *EtcdKV) Prepare(ctx context.Context, workers int) error {
	if e.o.Mix == bench.MixPut {
		return nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := range max(workers, 1) {
		wg.Go(func() {
			ep := e.o.Endpoints[w%len(e.o.Endpoints)]
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= e.o.Keys {
					return
				}
				if err := e.post(ctx, "put", ep+etcdPutPath, e.putBody(e.key(i))); err != nil {
					once.Do(func() { first = fmt.Errorf("fill key %s: %w", e.key(i), err); cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// Health returns nil when the member at endpoint answers its /health
// check, which etcd fails while the member has no leader.
func (e *EtcdKV) Health(ctx context.Context, endpoint string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(endpoint, "/")+etcdHealth, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	return e.do(req, "health")
}

// key names key number i, as KV does.
func (e *EtcdKV) key(i int) string { return bench.KVKey(e.o.KeyPrefix, i) }

// putBody returns the gateway's PutRequest for key and the value:
// {"key":"<base64>","value":"<base64>"}.
func (e *EtcdKV) putBody(key string) []byte {
	b := make([]byte, 0, len(`{"key":"","value":""}`)+base64.StdEncoding.EncodedLen(len(key))+len(e.value64))
	b = append(b, `{"key":"`...)
	b = base64.StdEncoding.AppendEncode(b, []byte(key))
	b = append(b, `","value":"`...)
	b = append(b, e.value64...)
	return append(b, `"}`...)
}

// rangeBody returns the gateway's RangeRequest for the single key:
// {"key":"<base64>"}.
func (e *EtcdKV) rangeBody(key string) []byte {
	b := make([]byte, 0, len(`{"key":""}`)+base64.StdEncoding.EncodedLen(len(key)))
	b = append(b, `{"key":"`...)
	b = base64.StdEncoding.AppendEncode(b, []byte(key))
	return append(b, `"}`...)
}

// post sends body as JSON to url; op names the operation in errors.
func (e *EtcdKV) post(ctx context.Context, op, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/json")
	return e.do(req, op)
}

// do sends req and reads the whole response, so that the connection is
// reused; a status other than 2xx is an error quoting the start of the
// body. Errors leave out the key, so that failures of one kind count
// together.
func (e *EtcdKV) do(req *http.Request, op string) error {
	resp, err := e.o.HTTP.Do(req)
	if err != nil {
		return bench.OpError(op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return fmt.Errorf("%s: reading response: %w", op, err)
		}
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxExcerpt+1))
	_, _ = io.Copy(io.Discard, resp.Body)
	more := ""
	if len(b) > maxExcerpt {
		b, more = b[:maxExcerpt], "..."
	}
	excerpt := strings.Join(strings.Fields(string(b)), " ") + more
	return fmt.Errorf("%s: %d %s: %s", op, resp.StatusCode, http.StatusText(resp.StatusCode), excerpt)
}

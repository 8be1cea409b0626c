package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/parley-chat/parley/client"
)

// KV mixes.
const (
	MixPut   = "put"   // every operation stores a value
	MixGet   = "get"   // every operation reads a value (keys are filled first)
	MixMixed = "mixed" // half puts, half gets (keys are filled first)
)

// KVOptions shape the KV workload.
type KVOptions struct {
	// Clients are one client per target node; worker w uses
	// Clients[w % len(Clients)], spreading workers round-robin.
	Clients []*client.Client
	// Mix is MixPut, MixGet or MixMixed.
	Mix string
	// ValueSize is the size of every stored value in bytes.
	ValueSize int
	// Keys is the size of the keyspace; operation i uses a key picked from
	// it by a hash of i.
	Keys int
	// KeyPrefix starts every key, keeping benchmark data apart.
	KeyPrefix string
	// Pool, when not nil, sends each operation to the client of the
	// server leading its key's partition (the worker's own client when
	// the pool does not know it).
	Pool *client.Pool
}

// KV is the key-value workload: puts, gets or both against a fixed
// keyspace.
type KV struct {
	o     KVOptions
	value []byte
}

// Compile-time checks that KV is a workload that prepares.
var (
	_ Workload = (*KV)(nil)
	_ Preparer = (*KV)(nil)
)

// NewKV checks o and returns the workload.
func NewKV(o KVOptions) (*KV, error) {
	switch {
	case len(o.Clients) == 0:
		return nil, errors.New("kv workload: no servers")
	case o.Mix != MixPut && o.Mix != MixGet && o.Mix != MixMixed:
		return nil, fmt.Errorf("kv workload: mix %q: want put, get or mixed", o.Mix)
	case o.ValueSize < 0:
		return nil, fmt.Errorf("kv workload: value size %d: must not be negative", o.ValueSize)
	case o.Keys < 1:
		return nil, fmt.Errorf("kv workload: keys %d: want at least 1", o.Keys)
	}
	return &KV{o: o, value: KVValue(o.ValueSize)}, nil
}

// Name implements Workload: "kv/put", "kv/get" or "kv/mixed".
func (k *KV) Name() string { return "kv/" + k.o.Mix }

// Op implements Workload.
func (k *KV) Op(ctx context.Context, worker, i int) error {
	n, put := KVOp(k.o.Mix, k.o.Keys, i)
	key := k.key(n)
	c := k.client(worker, key)
	if put {
		_, err := c.KVPut(ctx, key, k.value, client.PutOptions{})
		return OpError("put", err)
	}
	_, _, err := c.KVGet(ctx, key, client.GetOptions{})
	if ce, ok := errors.AsType[*client.Error](err); ok && ce.Status == http.StatusNotFound {
		return nil // a read of a missing key is still a read
	}
	return OpError("get", err)
}

// Prepare implements Preparer: for reads, every key of the keyspace is
// stored once, by workers goroutines.
func (k *KV) Prepare(ctx context.Context, workers int) error {
	if k.o.Mix == MixPut {
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
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= k.o.Keys {
					return
				}
				key := k.key(i)
				if _, err := k.client(w, key).KVPut(ctx, key, k.value, client.PutOptions{}); err != nil {
					once.Do(func() { first = fmt.Errorf("fill key %s: %w", key, err); cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// client is the client worker sends key's operation with: the pool's pick,
// else the worker's own.
func (k *KV) client(worker int, key string) *client.Client {
	c := k.o.Clients[worker%len(k.o.Clients)]
	if k.o.Pool != nil {
		return k.o.Pool.ForKV(key, c)
	}
	return c
}

// key names key number i.
func (k *KV) key(i int) string { return KVKey(k.o.KeyPrefix, i) }

// KVOp is the choice operation i of a kv workload makes among keys keys
// under mix: the number of its key, and whether it is a put. The workloads
// of internal/bench/peers choose with it too, so that every system sees the
// same keys in the same order.
func KVOp(mix string, keys, i int) (key int, put bool) {
	h := mix64(uint64(i))
	return int(h % uint64(keys)), mix == MixPut || (mix == MixMixed && h>>63 == 0)
}

// KVKey names key number i of a keyspace under prefix.
func KVKey(prefix string, i int) string { return fmt.Sprintf("%s%08d", prefix, i) }

// KVValue returns the value of size bytes every kv workload stores:
// "abc...zabc...".
func KVValue(size int) []byte {
	v := make([]byte, size)
	for i := range v {
		v[i] = 'a' + byte(i%26)
	}
	return v
}

// OpError describes a failed operation without its key, so that failures
// of one kind count together.
func OpError(op string, err error) error {
	if err == nil {
		return nil
	}
	if ce, ok := errors.AsType[*client.Error](err); ok {
		return fmt.Errorf("%s: %d %s: %s", op, ce.Status, ce.Code, ce.Message)
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return fmt.Errorf("%s: %w", op, ue.Err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// mix64 scrambles i (splitmix64's finaliser), so consecutive operations
// touch unrelated keys.
func mix64(i uint64) uint64 {
	i += 0x9e3779b97f4a7c15
	i = (i ^ i>>30) * 0xbf58476d1ce4e5b9
	i = (i ^ i>>27) * 0x94d049bb133111eb
	return i ^ i>>31
}

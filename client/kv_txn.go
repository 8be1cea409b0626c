package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// KVEvent is one version of a key (KVHistory) or one change a watch
// delivers: Type is "put", "delete" or "expire"; a put carries its Value.
type KVEvent struct {
	Type       string `json:"type"`
	Key        string `json:"key"`
	Revision   uint64 `json:"revision"`
	Version    uint64 `json:"version"`
	ModifiedMs int64  `json:"modified_ms"`
	Value      []byte `json:"value,omitempty"`
}

// KVHistory is the kept versions of a key, oldest first, and its
// partition's revision at the read.
type KVHistory struct {
	Key      string    `json:"key"`
	Revision uint64    `json:"revision"`
	Versions []KVEvent `json:"versions"`
}

// KVHistory returns the kept versions of key (the server keeps the last
// --kv-history of them, and every version of its partition's latest
// revisions).
func (c *Client) KVHistory(ctx context.Context, key string) (KVHistory, error) {
	var h KVHistory
	_, err := c.getJSON(ctx, kvPath(key), url.Values{"history": {""}}, &h)
	return h, err
}

// TxnCompare is one condition of a transaction: the key's version is
// Version (0: the key is missing), or, when Value is not nil, the key holds
// Value.
type TxnCompare struct {
	Key     string
	Version uint64
	Value   []byte
}

// TxnOp is one operation of a transaction: Op is "put" (Value, TTL or
// Lease), "delete" or "get".
type TxnOp struct {
	Op    string
	Key   string
	Value []byte
	TTL   time.Duration
	Lease uint64
}

// TxnPut, TxnDelete and TxnGet make the operations of a transaction.
func TxnPut(key string, value []byte) TxnOp { return TxnOp{Op: "put", Key: key, Value: value} }

// TxnDelete: see TxnPut.
func TxnDelete(key string) TxnOp { return TxnOp{Op: "delete", Key: key} }

// TxnGet: see TxnPut.
func TxnGet(key string) TxnOp { return TxnOp{Op: "get", Key: key} }

// Txn is a transaction: when every comparison holds, Success runs, else
// Failure, atomically. All its keys must live in one partition: give
// related keys one {tag} ("{cart42}/items", "{cart42}/total").
type Txn struct {
	Compare          []TxnCompare
	Success, Failure []TxnOp
	// IdempotencyKey makes a retry apply once.
	IdempotencyKey string
}

// TxnOpResult is the answer of one operation: a put's new version, a
// delete's removed version (Found false: the key was missing), a get's
// value.
type TxnOpResult struct {
	Op       string `json:"op"`
	Key      string `json:"key"`
	Found    bool   `json:"found"`
	Version  uint64 `json:"version"`
	Revision uint64 `json:"revision"`
	Value    []byte `json:"value"`
}

// TxnResult says which branch ran, the revision of its writes, and each
// operation's answer.
type TxnResult struct {
	Succeeded bool          `json:"succeeded"`
	Revision  uint64        `json:"revision"`
	Results   []TxnOpResult `json:"results"`
}

type txnCompareJSON struct {
	Key     string  `json:"key"`
	Version *uint64 `json:"version,omitempty"`
	Value   *[]byte `json:"value,omitempty"`
}

type txnOpJSON struct {
	Op    string `json:"op"`
	Key   string `json:"key"`
	Value []byte `json:"value,omitempty"`
	TTL   string `json:"ttl,omitempty"`
	Lease uint64 `json:"lease,omitempty"`
}

// KVTxn runs t. A transaction whose keys span partitions is refused with
// a 400 *Error naming them.
func (c *Client) KVTxn(ctx context.Context, t Txn) (TxnResult, error) {
	body := struct {
		Compare []txnCompareJSON `json:"compare"`
		Success []txnOpJSON      `json:"success"`
		Failure []txnOpJSON      `json:"failure"`
	}{Compare: []txnCompareJSON{}, Success: txnOps(t.Success), Failure: txnOps(t.Failure)}
	for _, cmp := range t.Compare {
		j := txnCompareJSON{Key: cmp.Key}
		if cmp.Value != nil {
			v := cmp.Value
			j.Value = &v
		} else {
			v := cmp.Version
			j.Version = &v
		}
		body.Compare = append(body.Compare, j)
	}
	if t.IdempotencyKey != "" {
		ctx = WithIdempotencyKey(ctx, t.IdempotencyKey)
	}
	var res TxnResult
	_, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/kv/txn", body, &res)
	return res, err
}

func txnOps(ops []TxnOp) []txnOpJSON {
	out := make([]txnOpJSON, 0, len(ops))
	for _, op := range ops {
		j := txnOpJSON{Op: op.Op, Key: op.Key, Value: op.Value, Lease: op.Lease}
		if op.TTL != 0 {
			j.TTL = op.TTL.String()
		}
		out = append(out, j)
	}
	return out
}

// Lease is an etcd-style lease: keys put with it are deleted when it
// expires (no keep-alive within TTL) or is revoked.
type Lease struct {
	ID          uint64 `json:"id"`
	TTLMs       uint64 `json:"ttl_ms"`
	DeadlineMs  uint64 `json:"deadline_ms"`
	RemainingMs int64  `json:"remaining_ms"`
}

// LeaseGrant creates a lease of ttl (at least a second).
func (c *Client) LeaseGrant(ctx context.Context, ttl time.Duration) (Lease, error) {
	var l Lease
	_, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/leases", map[string]string{"ttl": ttl.String()}, &l)
	return l, err
}

// LeaseKeepAlive renews lease id for its TTL; a lease that expired or was
// revoked is a 404 *Error.
func (c *Client) LeaseKeepAlive(ctx context.Context, id uint64) (Lease, error) {
	var l Lease
	_, err := c.sendJSON(ctx, http.MethodPost, fmt.Sprintf("/api/v1/leases/%d/keepalive", id), nil, &l)
	return l, err
}

// LeaseGet reads lease id.
func (c *Client) LeaseGet(ctx context.Context, id uint64) (Lease, error) {
	var l Lease
	_, err := c.getJSON(ctx, fmt.Sprintf("/api/v1/leases/%d", id), nil, &l)
	return l, err
}

// LeaseRevoke ends lease id, deleting every key attached to it.
func (c *Client) LeaseRevoke(ctx context.Context, id uint64) error {
	_, err := c.sendJSON(ctx, http.MethodDelete, fmt.Sprintf("/api/v1/leases/%d", id), nil, nil)
	return err
}

package wire

import (
	"encoding/binary"

	"github.com/parley-chat/parley/internal/errs"
)

// MaxIdempotencyKey is the longest client idempotency key in bytes, in every
// domain.
const MaxIdempotencyKey = 256

// CheckIdempotencyKey refuses a client idempotency key longer than
// MaxIdempotencyKey with errs.Invalid.
func CheckIdempotencyKey(key string) error {
	if len(key) > MaxIdempotencyKey {
		return errs.New(errs.Invalid, "idempotency key is %d bytes; the limit is %d", len(key), MaxIdempotencyKey)
	}
	return nil
}

// DedupKey builds the replication dedup key of a request a client made
// idempotent: the domain's head bytes, then the parts that say whose request
// it is and which, in the domain's layout. Every node must build the same
// key for the same request, so that a retry through any node finds the
// first result: a domain's layout never changes once released (the domains'
// pin tests hold them). A nil *DedupKey (no idempotency key) builds "".
type DedupKey struct{ b []byte }

// NewDedupKey starts the key of a request made with idempotencyKey; head is
// the domain's Tag, then, where one idempotency key may name several kinds
// of request, the op. It returns nil when idempotencyKey is empty: the
// request is not idempotent, and Done returns "".
func NewDedupKey(idempotencyKey string, head ...byte) *DedupKey {
	if idempotencyKey == "" {
		return nil
	}
	return &DedupKey{b: append(make([]byte, 0, len(head)+2*binary.MaxVarintLen64+32+len(idempotencyKey)), head...)}
}

// String appends s as a uvarint length and its bytes (AppendString), which
// keeps ("ab", "c") apart from ("a", "bc").
func (k *DedupKey) String(s string) *DedupKey {
	if k != nil {
		k.b = AppendString(k.b, s)
	}
	return k
}

// Uvarint appends v as a uvarint.
func (k *DedupKey) Uvarint(v uint64) *DedupKey {
	if k != nil {
		k.b = binary.AppendUvarint(k.b, v)
	}
	return k
}

// Raw appends s as it is: only as the last part, which needs no length.
func (k *DedupKey) Raw(s string) *DedupKey {
	if k != nil {
		k.b = append(k.b, s...)
	}
	return k
}

// Done returns the key, "" for a nil k.
func (k *DedupKey) Done() string {
	if k == nil {
		return ""
	}
	return string(k.b)
}

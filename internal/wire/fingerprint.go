package wire

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// Fingerprint identifies one client write request, so that its idempotency
// key can be told apart from the same key sent with another request: the
// same bytes (method, path and query, the precondition headers, the body)
// give the same fingerprint on every retry and through any node. The HTTP
// layer starts it and feeds it the body it reads; the router takes its Sum
// when it proposes with a client idempotency key. It is not safe for
// concurrent use: the request's handler owns it.
type Fingerprint struct {
	h   hash.Hash
	buf []byte // scratch for one length-prefixed field
}

// NewFingerprint starts the fingerprint of a request from its method, its
// path with the raw query, and the headers that change what a write does.
func NewFingerprint(method, requestURI string, headers ...string) *Fingerprint {
	f := &Fingerprint{h: sha256.New(), buf: make([]byte, 0, 128)}
	f.field(method)
	f.field(requestURI)
	for _, h := range headers {
		f.field(h)
	}
	return f
}

// field adds s with its length, so ("ab", "c") and ("a", "bc") differ.
func (f *Fingerprint) field(s string) {
	f.buf = AppendString(f.buf[:0], s)
	f.h.Write(f.buf)
}

// Body adds body bytes the handler read, in order.
func (f *Fingerprint) Body(b []byte) {
	if f != nil {
		f.buf = binary.AppendUvarint(f.buf[:0], uint64(len(b)))
		f.h.Write(f.buf)
		f.h.Write(b)
	}
}

// Sum returns the fingerprint of what was added so far (16 bytes); nil for
// a nil Fingerprint.
func (f *Fingerprint) Sum() []byte {
	if f == nil {
		return nil
	}
	return f.h.Sum(nil)[:16]
}

type fingerprintKey struct{}

// WithFingerprint returns ctx carrying f.
func WithFingerprint(ctx context.Context, f *Fingerprint) context.Context {
	return context.WithValue(ctx, fingerprintKey{}, f)
}

// FingerprintOf returns the fingerprint ctx carries, or nil.
func FingerprintOf(ctx context.Context) *Fingerprint {
	f, _ := ctx.Value(fingerprintKey{}).(*Fingerprint)
	return f
}

package wire

import (
	"bytes"
	"context"
	"testing"
)

func TestFingerprint(t *testing.T) {
	sum := func(method, uri string, body []byte, headers ...string) []byte {
		f := NewFingerprint(method, uri, headers...)
		f.Body(body)
		return f.Sum()
	}
	base := sum("PUT", "/api/v1/kv/a", []byte("v1"), "", "")
	if len(base) != 16 || !bytes.Equal(base, sum("PUT", "/api/v1/kv/a", []byte("v1"), "", "")) {
		t.Fatalf("the same request gives %x and another sum", base)
	}
	for name, other := range map[string][]byte{
		"method":  sum("POST", "/api/v1/kv/a", []byte("v1"), "", ""),
		"path":    sum("PUT", "/api/v1/kv/b", []byte("v1"), "", ""),
		"query":   sum("PUT", "/api/v1/kv/a?ttl=1s", []byte("v1"), "", ""),
		"body":    sum("PUT", "/api/v1/kv/a", []byte("v2"), "", ""),
		"header":  sum("PUT", "/api/v1/kv/a", []byte("v1"), "3", ""),
		"shifted": sum("PUT", "/api/v1/kv/a", []byte("v1"), "", "3"),
		"split":   sum("PUT", "/api/v1/kv/av", []byte("1"), "", ""),
	} {
		if bytes.Equal(base, other) {
			t.Errorf("another %s gives the same fingerprint", name)
		}
	}
	var none *Fingerprint
	none.Body([]byte("x"))
	if none.Sum() != nil || FingerprintOf(context.Background()) != nil {
		t.Fatal("no fingerprint should sum to nil")
	}
	f := NewFingerprint("PUT", "/x")
	if FingerprintOf(WithFingerprint(context.Background(), f)) != f {
		t.Fatal("the context lost the fingerprint")
	}
}

// The cost a write with a 256-byte body pays for its fingerprint (every
// write gets one, see api.withFingerprint).
func BenchmarkFingerprint(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 256)
	b.ReportAllocs()
	for b.Loop() {
		f := NewFingerprint("PUT", "/api/v1/kv/users/alice/settings", "", "")
		f.Body(body)
		_ = f.Sum()
	}
}

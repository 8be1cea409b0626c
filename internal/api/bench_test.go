package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/state/statetest"
	"github.com/parley-chat/parley/internal/wire"
)

func benchHandler(b *testing.B) http.Handler {
	b.Helper()
	svc := kv.NewService(statetest.NewReplicator(16, kv.StateMachine{}), kv.Limits{})
	return New(Config{KV: svc, Status: &fakeStatus{ready: true}}).Handler()
}

func BenchmarkServer_KVPut(b *testing.B) {
	h := benchHandler(b)
	value := bytes.Repeat([]byte("x"), 256)
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPut, "/api/v1/kv/users/alice/settings", bytes.NewReader(value))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

func BenchmarkServer_KVGet(b *testing.B) {
	h := benchHandler(b)
	r := httptest.NewRequest(http.MethodPut, "/api/v1/kv/users/alice/settings", bytes.NewReader(make([]byte, 256)))
	h.ServeHTTP(httptest.NewRecorder(), r)
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/kv/users/alice/settings", nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkWithFingerprint is what every write request pays for its
// idempotency fingerprint: the request copy with the context, hashing a
// 256-byte body, and the sum the router takes.
func BenchmarkWithFingerprint(b *testing.B) {
	value := bytes.Repeat([]byte("x"), 256)
	r := httptest.NewRequest(http.MethodPut, "/api/v1/kv/users/alice/settings", bytes.NewReader(value))
	b.ReportAllocs()
	for b.Loop() {
		fr := withFingerprint(r)
		f := wire.FingerprintOf(fr.Context())
		f.Body(value)
		_ = f.Sum()
	}
}

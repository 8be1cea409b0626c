package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/state/statetest"
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

package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// BenchmarkServer_Redirect measures GET /s/{code} served from the resolver
// cache, as a browser sends it (User-Agent and Referer), with the visit
// counted for the periodic flush: the redirect path's whole cost on the
// serving node, without the network.
func BenchmarkServer_Redirect(b *testing.B) {
	links, err := link.NewService(statetest.NewReplicator(16, link.StateMachine{}), link.Config{})
	if err != nil {
		b.Fatal(err)
	}
	codes := make([]string, 1000)
	for i := range codes {
		codes[i] = fmt.Sprintf("code%d", i)
		if _, err := links.Create(context.Background(), "alice", "https://example.com/"+codes[i], codes[i], "", link.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	h := New(Config{KV: kv.NewService(statetest.NewReplicator(1, kv.StateMachine{}), kv.Limits{}), Status: &fakeStatus{ready: true}, Links: links, PublicURL: "https://par.ly"}).Handler()
	reqs := make([]*http.Request, len(codes))
	for i, c := range codes {
		r := httptest.NewRequest(http.MethodGet, "/s/"+c, nil)
		r.Header.Set("User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
		r.Header.Set("Referer", "https://news.example.org/item?id=42")
		reqs[i] = r
		h.ServeHTTP(httptest.NewRecorder(), r) // warm the cache
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, reqs[i%len(reqs)])
		if w.Code != http.StatusFound {
			b.Fatal(w.Code)
		}
		i++
	}
}

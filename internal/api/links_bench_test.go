package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// BenchmarkServer_Redirect measures GET /s/{code} served from the resolver
// cache, as a browser sends it (User-Agent and Referer), with the visit
// counted for the periodic flush and the request observed as the node
// observes it: the redirect path's whole cost on the serving node, without
// the network and net/http's own per-request work. The writer is reused
// (its header map cleared), so allocs/op are the handler's alone.
func BenchmarkServer_Redirect(b *testing.B) {
	h, reqs := redirectBench(b)
	w := &benchWriter{header: http.Header{}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if status := w.serve(h, reqs[i%len(reqs)]); status != http.StatusFound {
			b.Fatal(status)
		}
		i++
	}
}

// BenchmarkServer_RedirectParallel is BenchmarkServer_Redirect from
// GOMAXPROCS goroutines at once, each with its own writer: what the
// resolver cache's and the visit counter's locks cost under contention.
func BenchmarkServer_RedirectParallel(b *testing.B) {
	h, reqs := redirectBench(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &benchWriter{header: http.Header{}}
		i := 0
		for pb.Next() {
			if status := w.serve(h, reqs[i%len(reqs)]); status != http.StatusFound {
				b.Error(status)
				return
			}
			i++
		}
	})
}

// redirectBench returns the handler a node serves, Redirects in front of
// Handler, over
// 1000 links, with an Observe that does what a node's does cheaply, and
// one request per link, the cache warmed.
func redirectBench(b *testing.B) (http.Handler, []*http.Request) {
	b.Helper()
	srv, codes := redirectBenchServer(b)
	h := srv.Redirects(srv.Handler())
	reqs := make([]*http.Request, len(codes))
	for i, c := range codes {
		r := httptest.NewRequest(http.MethodGet, "/s/"+c, nil)
		r.Header.Set("User-Agent", benchUserAgent)
		r.Header.Set("Referer", benchReferer)
		reqs[i] = r
		h.ServeHTTP(httptest.NewRecorder(), r) // warm the cache
	}
	return h, reqs
}

// The headers of the benchmarks' requests, as a browser sends them.
const (
	benchUserAgent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	benchReferer   = "https://news.example.org/item?id=42"
)

// redirectBenchServer returns a Server over 1000 links, with an Observe
// that does what a node's does cheaply, and the links' codes.
func redirectBenchServer(b *testing.B) (*Server, []string) {
	b.Helper()
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
	var observed int
	srv := New(Config{
		KV: kv.NewService(statetest.NewReplicator(1, kv.StateMachine{}), kv.Limits{}), Status: &fakeStatus{ready: true},
		Links: links, PublicURL: "https://par.ly",
		Observe: func(string, int, time.Duration) { observed++ },
	})
	return srv, codes
}

// BenchmarkServer_LinksHandlerRedirect is BenchmarkServer_Redirect on the
// links listener's handler (LinksHandler): the same redirects, served from
// a reused fasthttp request, so allocs/op are the handler's alone.
func BenchmarkServer_LinksHandlerRedirect(b *testing.B) {
	srv, codes := redirectBenchServer(b)
	h := srv.LinksHandler(context.Background())
	uris := make([][]byte, len(codes))
	for i, c := range codes {
		uris[i] = []byte("/s/" + c)
	}
	var ctx fasthttp.RequestCtx
	serve := func(uri []byte) int {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.SetRequestURIBytes(uri)
		ctx.Request.Header.SetUserAgent(benchUserAgent)
		ctx.Request.Header.SetReferer(benchReferer)
		h(&ctx)
		return ctx.Response.StatusCode()
	}
	for _, u := range uris {
		serve(u) // warm the cache
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if status := serve(uris[i%len(uris)]); status != http.StatusFound {
			b.Fatal(status)
		}
		i++
	}
}

// benchWriter is a ResponseWriter that keeps the status and drops the
// body.
type benchWriter struct {
	header http.Header
	status int
}

// serve has h answer r into w, emptied first, and returns the status.
func (w *benchWriter) serve(h http.Handler, r *http.Request) int {
	clear(w.header)
	w.status = 0
	h.ServeHTTP(w, r)
	return w.status
}

func (w *benchWriter) Header() http.Header { return w.header }

func (w *benchWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(p), nil
}

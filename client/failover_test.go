package client

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/hangserver"
)

// deadURL is the base URL of a port nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}

// recorder is a server that answers every request as a kv put of
// version 7 and records the requests it got.
func recorder(t *testing.T) (*httptest.Server, *[]string) {
	t.Helper()
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, r.Method+" "+r.URL.Path+" "+string(b))
		w.Header().Set("X-Parley-Version", "7")
		w.Header().Set("X-Parley-Revision", "9")
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, &bodies
}

func TestClient_FallsBackWhenItCannotConnect(t *testing.T) {
	srv, bodies := recorder(t)
	dead := deadURL(t)
	c := New(dead, WithFallbacks(dead, srv.URL+"/"))
	v, err := c.KVPut(context.Background(), "k", []byte("hello"), PutOptions{})
	if err != nil || v != 7 {
		t.Fatalf("put through a dead first server = %d, %v; want version 7 from the fallback", v, err)
	}
	if len(*bodies) != 1 || (*bodies)[0] != "PUT /api/v1/kv/k hello" {
		t.Fatalf("the fallback got %q, want the put once with its body", *bodies)
	}
	if c.Server() != srv.URL {
		t.Fatalf("Server() = %s after the fallback answered, want %s", c.Server(), srv.URL)
	}
	if _, err := c.KVPut(context.Background(), "k", []byte("again"), PutOptions{}); err != nil || len(*bodies) != 2 {
		t.Fatalf("second put: %v, %d requests at the fallback", err, len(*bodies))
	}
}

func TestClient_NeverResendsARequestThatReachedAServer(t *testing.T) {
	var hits atomic.Int32
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		_ = conn.Close() // the request arrived; its answer is lost
	}))
	t.Cleanup(cut.Close)
	srv, bodies := recorder(t)
	c := New(cut.URL, WithFallbacks(srv.URL))
	if _, err := c.KVPut(context.Background(), "k", []byte("hello"), PutOptions{}); err == nil {
		t.Fatal("a put whose connection was cut after it was sent succeeded")
	}
	if len(*bodies) != 0 || hits.Load() == 0 {
		t.Fatalf("after a cut answer the fallback got %q (want nothing: the first server may have applied it)", *bodies)
	}
	if c.Server() != cut.URL {
		t.Fatalf("Server() = %s, want the first server still", c.Server())
	}
}

func TestClient_WithoutFallbacksReportsTheDialError(t *testing.T) {
	c := New(deadURL(t))
	if err := c.Healthz(context.Background()); err == nil || !isDialError(err) {
		t.Fatalf("Healthz of a dead server = %v, want a dial error", err)
	}
}

// A GET, and a write with an idempotency key, that a server accepts and
// never answers go to the next server after the attempt timeout; a write
// without a key stays with the server that has it, whatever the wait.
func TestClient_MovesOnFromAServerThatDoesNotAnswer(t *testing.T) {
	hung, conns := hangserver.Start(t)
	srv, bodies := recorder(t)
	newClient := func() *Client {
		return New(hung, WithFallbacks(srv.URL), WithAttemptTimeout(100*time.Millisecond))
	}
	c := newClient()
	if err := c.Healthz(context.Background()); err != nil {
		t.Fatalf("GET through a server that never answers: %v, want the fallback's answer", err)
	}
	if conns.Load() == 0 || c.Server() != srv.URL {
		t.Fatalf("%d connections to the hung server, Server() = %s: want the GET sent there first, then the fallback used", conns.Load(), c.Server())
	}
	if _, err := newClient().KVPut(context.Background(), "k", []byte("keyed"), PutOptions{IdempotencyKey: "req-1"}); err != nil {
		t.Fatalf("keyed put through a server that never answers: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	if _, err := newClient().KVPut(ctx, "k", []byte("unkeyed"), PutOptions{}); err == nil {
		t.Fatal("a put without a key that its server never answered succeeded")
	}
	want := []string{"GET /healthz ", "PUT /api/v1/kv/k keyed"}
	if !slices.Equal(*bodies, want) {
		t.Fatalf("the fallback got %q, want %q: the unkeyed put may be applied by the hung server, so it stays there", *bodies, want)
	}
}

// A write with an idempotency key whose connection breaks before its
// answer (its node killed mid-request) goes to the next server, once.
func TestClient_ResendsAKeyedWriteWhoseAnswerWasCut(t *testing.T) {
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		_ = conn.Close()
	}))
	t.Cleanup(cut.Close)
	srv, bodies := recorder(t)
	c := New(cut.URL, WithFallbacks(srv.URL))
	if v, err := c.KVPut(context.Background(), "k", []byte("hello"), PutOptions{IdempotencyKey: "req-1"}); err != nil || v != 7 {
		t.Fatalf("keyed put whose answer was cut = %d, %v; want version 7 from the fallback", v, err)
	}
	if len(*bodies) != 1 || c.Server() != srv.URL {
		t.Fatalf("the fallback got %q, Server() = %s", *bodies, c.Server())
	}
}

// A long-polling receive may wait its own wait on top of the attempt
// timeout: a server that answers within it is not left.
func TestClient_AttemptTimeoutLeavesALongPollItsWait(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) // the long poll's wait, then nothing came
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(slow.Close)
	srv, bodies := recorder(t)
	c := New(slow.URL, WithFallbacks(srv.URL), WithAttemptTimeout(100*time.Millisecond))
	ctx := WithIdempotencyKey(context.Background(), "recv-1")
	if _, found, err := c.Receive(ctx, "jobs", ReceiveOptions{Wait: time.Second}); err != nil || found {
		t.Fatalf("long poll = found %v, %v; want an empty answer from its own server", found, err)
	}
	if len(*bodies) != 0 || c.Server() != slow.URL {
		t.Fatalf("the fallback got %q, Server() = %s: the long poll was taken from its server", *bodies, c.Server())
	}
}

// A server that is slow to answer but alive (it answers GET /healthz) is
// waited for: the request is not sent to another server too.
func TestClient_AttemptTimeoutWaitsForASlowLiveServer(t *testing.T) {
	var probes atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			probes.Add(1)
			w.WriteHeader(http.StatusOK)
			return
		}
		time.Sleep(300 * time.Millisecond)
		w.Header().Set("X-Parley-Version", "3")
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(slow.Close)
	srv, bodies := recorder(t)
	c := New(slow.URL, WithFallbacks(srv.URL), WithAttemptTimeout(50*time.Millisecond))
	if v, err := c.KVPut(context.Background(), "k", []byte("v"), PutOptions{IdempotencyKey: "req-1"}); err != nil || v != 3 {
		t.Fatalf("put to a slow live server = %d, %v; want its own answer, version 3", v, err)
	}
	if len(*bodies) != 0 || probes.Load() == 0 {
		t.Fatalf("the fallback got %q after %d probes: a slow live server was left", *bodies, probes.Load())
	}
}

// A server whose address takes no connection (it drops packets, as a
// stopped pod's old address does) is left once the attempt timeout passes,
// without a GET /healthz that would wait on the same address again.
func TestClient_LeavesAServerThatTakesNoConnectionUnasked(t *testing.T) {
	srv, bodies := recorder(t)
	const dead = "192.0.2.1:7070" // TEST-NET-1: never dialled, the dialer below hangs
	var deadDials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == dead {
			deadDials.Add(1)
			<-ctx.Done() // no dial timeout of its own: only the attempt's ends it
			return nil, ctx.Err()
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c := New("http://"+dead, WithHTTPClient(&http.Client{Transport: tr}), WithFallbacks(srv.URL), WithAttemptTimeout(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := c.KVPut(ctx, "k", []byte("v"), PutOptions{IdempotencyKey: "req-1"}); err != nil || v != 7 {
		t.Fatalf("keyed put through an address that takes no connection = %d, %v; want version 7 from the fallback", v, err)
	}
	if n := deadDials.Load(); n != 1 {
		t.Fatalf("%d dials to the dead address, want 1: the request's own, and no probe after it", n)
	}
	if len(*bodies) != 1 || c.Server() != srv.URL {
		t.Fatalf("the fallback got %q, Server() = %s", *bodies, c.Server())
	}
}

package client

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
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

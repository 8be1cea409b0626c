package connlimit

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// serve accepts from ln until it is closed, keeping every connection open
// (echoing one byte back per byte read) and handing it to accepted.
func serve(t *testing.T, ln net.Listener) chan net.Conn {
	t.Helper()
	accepted := make(chan net.Conn, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
			go func() { _, _ = io.Copy(c, c) }()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return accepted
}

// dial connects to ln and reports whether the server answers: a
// connection past a cap is closed by the server before it echoes.
func dial(t *testing.T, addr string) (net.Conn, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte{'x'}); err != nil {
		return c, false
	}
	b := make([]byte, 1)
	_, err = c.Read(b)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("neither answered nor closed within 5 s")
	}
	return c, err == nil
}

func listen(t *testing.T, l *Limiter) (string, chan net.Conn) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return raw.Addr().String(), serve(t, l.Listen(raw))
}

func TestLimiter_PerAddressCapClosesTheExtraConnection(t *testing.T) {
	l := New(Limits{PerAddress: 2})
	addr, accepted := listen(t, l)
	var held []net.Conn
	for i := range 2 {
		c, ok := dial(t, addr)
		if !ok {
			t.Fatalf("connection %d within the cap was refused", i+1)
		}
		held = append(held, c)
	}
	if _, ok := dial(t, addr); ok {
		t.Fatal("a third connection from one address was served, want it closed")
	}
	if s := l.Stats(); s.Open != 2 || s.RefusedPerAddress != 1 || s.RefusedTotal != 0 {
		t.Fatalf("stats = %+v, want 2 open, 1 refused per address", s)
	}

	// Once a connection closes on the server's side, its slot is free.
	_ = held[0].Close()
	(<-accepted).Close()
	deadline := time.Now().Add(5 * time.Second)
	for l.Stats().Open != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok := dial(t, addr); !ok {
		t.Fatalf("a connection after one closed was refused; stats %+v", l.Stats())
	}
}

func TestLimiter_TotalCapCountsEveryListener(t *testing.T) {
	l := New(Limits{Total: 2})
	a1, _ := listen(t, l)
	a2, _ := listen(t, l)
	if _, ok := dial(t, a1); !ok {
		t.Fatal("first connection refused")
	}
	if _, ok := dial(t, a2); !ok {
		t.Fatal("second connection, on the other listener, refused")
	}
	if _, ok := dial(t, a1); ok {
		t.Fatal("a third connection was served past a total cap of 2")
	}
	if s := l.Stats(); s.Open != 2 || s.RefusedTotal != 1 {
		t.Fatalf("stats = %+v, want 2 open, 1 refused in all", s)
	}
}

func TestLimiter_ZeroLimitsCapNothing(t *testing.T) {
	l := New(Limits{})
	addr, _ := listen(t, l)
	for i := range 20 {
		if _, ok := dial(t, addr); !ok {
			t.Fatalf("connection %d refused with no caps", i+1)
		}
	}
}

func TestConn_CloseTwiceReleasesOnce(t *testing.T) {
	l := New(Limits{PerAddress: 1})
	addr, accepted := listen(t, l)
	if _, ok := dial(t, addr); !ok {
		t.Fatal("refused")
	}
	c := <-accepted
	_ = c.Close()
	_ = c.Close()
	if s := l.Stats(); s.Open != 0 {
		t.Fatalf("open = %d after two closes of one connection, want 0", s.Open)
	}
}

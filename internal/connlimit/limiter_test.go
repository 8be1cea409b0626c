package connlimit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
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
	l := New(Limits{PerAddress: 2}, nil)
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
	l := New(Limits{Total: 2}, nil)
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
	l := New(Limits{}, nil)
	addr, _ := listen(t, l)
	for i := range 20 {
		if _, ok := dial(t, addr); !ok {
			t.Fatalf("connection %d refused with no caps", i+1)
		}
	}
}

func TestConn_CloseTwiceReleasesOnce(t *testing.T) {
	l := New(Limits{PerAddress: 1}, nil)
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

// records is a slog.Handler that keeps each record's attributes, for the
// accept goroutine's warnings.
type records struct {
	mu   sync.Mutex
	recs []map[string]any
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *records) WithGroup(string) slog.Handler            { return h }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	rec := map[string]any{"level": r.Level.String()}
	r.Attrs(func(a slog.Attr) bool {
		rec[a.Key] = a.Value.Any()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, rec)
	return nil
}

func (h *records) lines() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.recs)
}

// A refused client gets no answer, so the operator learns of refusals from
// the log: the first at once, naming the cap, its flag and the address,
// then at most one line a minute counting those refused since.
func TestLimiter_RefusalsAreLoggedOnceAMinute(t *testing.T) {
	var buf records
	l := New(Limits{PerAddress: 1}, slog.New(&buf))
	addr, _ := listen(t, l)
	if _, ok := dial(t, addr); !ok {
		t.Fatal("first connection refused")
	}
	if _, ok := dial(t, addr); ok {
		t.Fatal("a second connection from one address was served past a cap of 1")
	}
	recs := buf.lines()
	if len(recs) != 1 {
		t.Fatalf("logged %d lines after one refusal, want 1: %v", len(recs), recs)
	}
	r := recs[0]
	if r["level"] != "WARN" || r["cap"] != "per_address" || r["flag"] != "--limit-conns-per-address" ||
		r["last_address"] != "127.0.0.1" || r["limit"] != int64(1) || r["refused_since_last_warning"] != uint64(1) {
		t.Fatalf("warning = %v, want the per-address cap of 1, its flag, 127.0.0.1 and 1 refused", r)
	}

	// Within the minute the refusals are counted, not logged; the next
	// warning after it reports them all.
	now := time.Now()
	a := netip.MustParseAddr("192.0.2.7")
	l.warnRefused(a, capPerAddress, now)
	l.warnRefused(a, capTotal, now.Add(30*time.Second))
	if n := len(buf.lines()); n != 1 {
		t.Fatalf("%d lines within a minute of the first warning, want 1", n)
	}
	l.warnRefused(a, capTotal, now.Add(warnEvery+time.Second))
	recs = buf.lines()
	if len(recs) != 2 {
		t.Fatalf("%d lines a minute later, want 2", len(recs))
	}
	if r := recs[1]; r["cap"] != "total" || r["flag"] != "--limit-conns" || r["last_address"] != "192.0.2.7" || r["refused_since_last_warning"] != uint64(3) {
		t.Fatalf("second warning = %v, want the total cap, 192.0.2.7 and the 3 refusals since the first", r)
	}
}

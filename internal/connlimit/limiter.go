package connlimit

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// warnEvery is the least time between two warnings of refused
// connections: a flood logs a line a minute, not a line a connection.
const warnEvery = time.Minute

// Limits are a Limiter's caps; 0 means no cap.
type Limits struct {
	// PerAddress is how many connections one client address may hold open
	// at once.
	PerAddress int
	// Total is how many client connections the node holds open at once.
	Total int
}

// Limiter counts open connections by client address. It is safe for
// concurrent use.
type Limiter struct {
	limits Limits
	log    *slog.Logger // nil: refusals are only counted

	mu     sync.Mutex
	byAddr map[netip.Addr]int // open connections per address; no zero entries
	open   int                // the sum of byAddr

	refusedAddr  atomic.Uint64
	refusedTotal atomic.Uint64

	nextWarn   atomic.Int64  // unix nanoseconds before which no warning is logged
	unreported atomic.Uint64 // refusals since the last warning
}

// New returns a Limiter with limits. When log is not nil, refused
// connections are also logged as a warning naming the cap, its flag and
// the last refused address, at most once a minute with the number refused
// since the previous warning: a refused client gets no HTTP answer, so
// the log is where an operator learns why (a proxy or NAT sending every
// client from one address, for instance).
func New(limits Limits, log *slog.Logger) *Limiter {
	return &Limiter{limits: limits, log: log, byAddr: map[netip.Addr]int{}}
}

// Stats are a Limiter's counters.
type Stats struct {
	// Open is the connections open now.
	Open int
	// RefusedPerAddress and RefusedTotal count the connections closed at
	// accept because their address, or the node, was at its cap.
	RefusedPerAddress, RefusedTotal uint64
}

// Stats returns the counters.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	open := l.open
	l.mu.Unlock()
	return Stats{Open: open, RefusedPerAddress: l.refusedAddr.Load(), RefusedTotal: l.refusedTotal.Load()}
}

// The caps a connection can be refused by, as the refusal metric labels
// them.
const (
	capPerAddress = "per_address"
	capTotal      = "total"
)

// acquire counts a connection from addr, or returns the cap that refuses
// it ("" when it is counted).
func (l *Limiter) acquire(addr netip.Addr) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limits.Total > 0 && l.open >= l.limits.Total {
		l.refusedTotal.Add(1)
		return capTotal
	}
	if l.limits.PerAddress > 0 && l.byAddr[addr] >= l.limits.PerAddress {
		l.refusedAddr.Add(1)
		return capPerAddress
	}
	l.byAddr[addr]++
	l.open++
	return ""
}

// warnRefused logs a refusal by cap of a connection from addr, unless a
// warning was logged less than warnEvery ago (the refusal is then counted
// in the next one).
func (l *Limiter) warnRefused(addr netip.Addr, cap string, now time.Time) {
	l.unreported.Add(1)
	next := l.nextWarn.Load()
	if l.log == nil || now.UnixNano() < next || !l.nextWarn.CompareAndSwap(next, now.Add(warnEvery).UnixNano()) {
		return
	}
	n := l.unreported.Swap(0)
	limit, flag := l.limits.PerAddress, "--limit-conns-per-address"
	if cap == capTotal {
		limit, flag = l.limits.Total, "--limit-conns"
	}
	l.log.Warn("client connections refused at accept: a connection cap is reached",
		"cap", cap, "limit", limit, "flag", flag, "last_address", addr.String(), "refused_since_last_warning", n)
}

// release uncounts a connection acquire counted.
func (l *Limiter) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byAddr[addr] <= 1 {
		delete(l.byAddr, addr)
	} else {
		l.byAddr[addr]--
	}
	l.open--
}

// Listen wraps ln so that every connection it accepts is counted by l, and
// one past a cap is closed at once.
func (l *Limiter) Listen(ln net.Listener) net.Listener {
	return &listener{Listener: ln, l: l}
}

type listener struct {
	net.Listener
	l *Limiter
}

// Accept returns the next connection within the caps; those past them are
// closed here and never returned.
func (ln *listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := addrOf(c)
		if cap := ln.l.acquire(addr); cap != "" {
			ln.l.warnRefused(addr, cap, time.Now())
			_ = c.Close()
			continue
		}
		return &conn{Conn: c, l: ln.l, addr: addr}, nil
	}
}

// addrOf is c's remote IP address, IPv4-mapped IPv6 unmapped so that one
// host counts once; the zero Addr for a connection that is not TCP (all
// such share one count).
func addrOf(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap()
		}
	}
	return netip.Addr{}
}

type conn struct {
	net.Conn
	l    *Limiter
	addr netip.Addr
	once sync.Once
}

// Close closes the connection and, the first time, uncounts it.
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.addr) })
	return err
}

// Limits returns l's caps.
func (l *Limiter) Limits() Limits { return l.limits }

package connlimit

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

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

	mu     sync.Mutex
	byAddr map[netip.Addr]int // open connections per address; no zero entries
	open   int                // the sum of byAddr

	refusedAddr  atomic.Uint64
	refusedTotal atomic.Uint64
}

// New returns a Limiter with limits.
func New(limits Limits) *Limiter {
	return &Limiter{limits: limits, byAddr: map[netip.Addr]int{}}
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

// acquire counts a connection from addr, or reports false (counting the
// refusal) when a cap is reached.
func (l *Limiter) acquire(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limits.Total > 0 && l.open >= l.limits.Total {
		l.refusedTotal.Add(1)
		return false
	}
	if l.limits.PerAddress > 0 && l.byAddr[addr] >= l.limits.PerAddress {
		l.refusedAddr.Add(1)
		return false
	}
	l.byAddr[addr]++
	l.open++
	return true
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
		if !ln.l.acquire(addr) {
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

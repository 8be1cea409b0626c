package webhook

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
)

// blocked are the address ranges no hook may reach unless the operator
// allows them (Guard's allow list), each with the name a refusal gives.
var blocked = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified (this-network) address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT (shared) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address"},
	{netip.MustParsePrefix("fc00::/7"), "a private (unique local) address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// Guard decides where outgoing webhooks may connect: anywhere public,
// nowhere in the blocked ranges unless within an allowed prefix, and never
// to the cluster's own listeners. It checks a URL when a hook is made
// (CheckURL) and every address dialed when delivering (the Control of
// Dialer), so a name that resolves to a public address at creation and a
// private one later (DNS rebinding) is refused then too.
type Guard struct {
	allow []netip.Prefix
	// self returns the host:port addresses the cluster's nodes listen on.
	self     func() []string
	resolver *net.Resolver
}

// NewGuard returns a Guard allowing the blocked ranges within allow, and
// refusing the addresses self returns (nil: none).
func NewGuard(allow []netip.Prefix, self func() []string) *Guard {
	if self == nil {
		self = func() []string { return nil }
	}
	return &Guard{allow: allow, self: self, resolver: net.DefaultResolver}
}

// ParseCIDRs parses the operator's allowed prefixes (--webhook-allow-cidr):
// CIDRs, or single addresses.
func ParseCIDRs(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("webhook allow list: %q is neither a CIDR nor an address", s)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("webhook allow list: %q: %v", s, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// checkAddr returns why a hook may not connect to ip, "" when it may.
func (g *Guard) checkAddr(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	for _, p := range g.allow {
		if p.Contains(ip) {
			return ""
		}
	}
	for _, b := range blocked {
		if b.prefix.Contains(ip) {
			return b.what
		}
	}
	return ""
}

// isSelf reports whether ip:port is one of the cluster's own listeners.
func (g *Guard) isSelf(ctx context.Context, ap netip.AddrPort) bool {
	ip := ap.Addr().Unmap()
	for _, s := range g.self() {
		host, port, err := net.SplitHostPort(s)
		if err != nil || port != fmt.Sprint(ap.Port()) {
			continue
		}
		for _, a := range g.selfIPs(ctx, host) {
			if a == ip {
				return true
			}
		}
	}
	return false
}

// selfIPs returns the addresses a listener's host stands for: itself, the
// machine's own addresses for an unspecified host, else what it resolves
// to (nothing when it does not resolve).
func (g *Guard) selfIPs(ctx context.Context, host string) []netip.Addr {
	if a, err := netip.ParseAddr(host); err == nil && !a.IsUnspecified() {
		return []netip.Addr{a.Unmap()}
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		ips, _ := g.resolver.LookupNetIP(ctx, "ip", host)
		for i := range ips {
			ips[i] = ips[i].Unmap()
		}
		return ips
	}
	addrs, _ := net.InterfaceAddrs()
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out
}

// refusal checks one address a hook would connect to.
func (g *Guard) refusal(ctx context.Context, ap netip.AddrPort) error {
	if what := g.checkAddr(ap.Addr()); what != "" {
		return errs.New(errs.Forbidden, "url: %s is %s; webhooks may not reach private networks unless the operator allows the range (--webhook-allow-cidr)", ap.Addr(), what)
	}
	if g.isSelf(ctx, ap) {
		return errs.New(errs.Forbidden, "url: %s is one of this cluster's own addresses; webhooks may not call the cluster itself", ap)
	}
	return nil
}

// CheckURL checks an outgoing hook's URL: its form (chat.CheckHookURL),
// then every address its host resolves to. It is chat.Config.CheckHookURL.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := chat.CheckHookURL(raw)
	if err != nil {
		return err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	pn, err := netip.ParseAddrPort("0.0.0.0:" + port)
	if err != nil {
		return errs.New(errs.Invalid, "url: bad port %q", port)
	}
	ips, err := g.resolve(ctx, u.Hostname())
	if err != nil {
		return err
	}
	for _, ip := range ips {
		if err := g.refusal(ctx, netip.AddrPortFrom(ip, pn.Port())); err != nil {
			return err
		}
	}
	return nil
}

// resolve returns the addresses of host, a name or a literal address.
func (g *Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return nil, errs.New(errs.Invalid, "url: the host %q does not resolve", host)
	}
	return ips, nil
}

// control is the Dialer's Control: it refuses a connection to an address
// the Guard does not allow, after resolution, whatever the URL said.
func (g *Guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook: dial %q: %w", address, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := g.refusal(ctx, ap); err != nil {
		return fmt.Errorf("refused: %v", err)
	}
	return nil
}

// Dialer returns a dialer that connects only where the Guard allows.
func (g *Guard) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, Control: g.control}
}

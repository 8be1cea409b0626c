package link

import (
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/parley-chat/parley/internal/errs"
)

// checkLoop refuses a long URL that would send a visitor back to a short
// link of this cluster.
//
// self lists the bases that serve short links under /s/ (Config.SelfURLs):
// the public URL ("https://par.ly", whose host name matches on any port
// and scheme) and the members' HTTP addresses ("10.0.0.3:7070" or with a
// scheme, matching that port; a port-less one matches the default ports).
// A URL on one of them is refused when its path is under /s/ (any case,
// after percent-decoding and resolving dot segments and repeated slashes).
//
// roots lists the bases where every path is a short link: the short
// domain (Config.RootURL, "https://s.example", matching any port and
// scheme unless it names a port) and the nodes' links listeners
// (Config.SelfRoots, "10.0.0.3:8080", matching that port). A URL on one
// of them is refused whatever its path.
//
// Loopback names (localhost, 127.0.0.0/8, ::1, 0.0.0.0, in any of the
// spellings browsers accept, such as 2130706433 or 0x7f.1) stand for one
// another. Errors name the field "url".
func checkLoop(raw string, self, roots []string) error {
	u, err := url.Parse(raw)
	if err != nil || (len(self) == 0 && len(roots) == 0) {
		return nil // CheckURL refuses what does not parse
	}
	host, port := splitHostPort(u)
	for _, r := range roots {
		if selfHost(r, host, port) {
			return errs.New(errs.Invalid, "url points at %s, which serves this cluster's short links at every path (its short link domain or a node's links listener); a link to it would loop", u.Host)
		}
	}
	if !shortPath(u.Path) {
		return nil
	}
	for _, s := range self {
		if selfHost(s, host, port) {
			return errs.New(errs.Invalid, "url points back at a short link of this server (/s/ on %s); a link to itself would loop", u.Host)
		}
	}
	return nil
}

// shortPath reports whether p (decoded) reaches the short link routes.
func shortPath(p string) bool {
	p = "/" + strings.TrimLeft(p, "/")
	p = strings.ToLower(path.Clean(p))
	return p == "/s" || strings.HasPrefix(p, "/s/")
}

// splitHostPort returns u's host in canonical form (canonicalHost) and its
// port, the scheme's default when absent.
func splitHostPort(u *url.URL) (string, string) {
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return canonicalHost(u.Hostname()), strings.TrimLeft(port, "0")
}

// selfHost reports whether host:port is the cluster's address s.
func selfHost(s, host, port string) bool {
	withScheme := strings.Contains(s, "://")
	if !withScheme {
		s = "http://" + s
	}
	su, err := url.Parse(s)
	if err != nil || su.Hostname() == "" {
		return false
	}
	shost, sport := splitHostPort(su)
	if shost != host {
		return false
	}
	// A public URL (a base with a scheme and no explicit port) names the
	// host on every port; an address names one port.
	return (withScheme && su.Port() == "") || sport == port
}

// canonicalHost lower-cases a host name, drops a trailing dot, and maps
// every loopback or unspecified address, however spelled, to "loopback".
func canonicalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return "loopback"
	}
	ip := net.ParseIP(h)
	if ip == nil {
		ip = looseIPv4(h)
	}
	if ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) {
		return "loopback"
	}
	if ip != nil {
		return ip.String()
	}
	return h
}

// looseIPv4 parses the IPv4 forms browsers accept beyond dotted decimal
// (inet_aton's): one to four parts, each decimal, octal (leading 0) or hex
// (0x), the last filling the remaining bytes. It returns nil otherwise.
func looseIPv4(h string) net.IP {
	parts := strings.Split(h, ".")
	if len(parts) > 4 || h == "" {
		return nil
	}
	var vals []uint64
	for _, p := range parts {
		v, err := strconv.ParseUint(p, 0, 32)
		if err != nil {
			return nil
		}
		vals = append(vals, v)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return nil
	}
	var n uint64
	for _, v := range vals[:len(vals)-1] {
		if v > 255 {
			return nil
		}
		n = n<<8 | v
	}
	n = n<<(8*(5-len(vals))) | last
	return net.IPv4(byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

package web

import (
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// policyHead and policyTail surround connect-src in the Content-Security-
// Policy: scripts and styles come from this origin only (no inline code),
// nothing may frame the app, and forms post only here.
const (
	policyHead = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src "
	policyTail = "; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

// hostName matches the host of an origin: a DNS name, an IPv4 address or
// a bracketed IPv6 address. Anything else (spaces, semicolons, wildcards,
// paths, user info) is left out of the policy, so an address cannot add a
// directive or a wildcard source.
var hostName = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])$`)

// validHost reports whether h is "host" or "host:port" with a host that
// hostName accepts and a numeric port; port says whether it has one.
func validHost(h string) (ok, port bool) {
	name, p, err := net.SplitHostPort(h)
	if err != nil {
		return hostName.MatchString(h), false
	}
	if strings.Contains(name, ":") {
		name = "[" + name + "]"
	}
	if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 || !hostName.MatchString(name) {
		return false, false
	}
	return true, true
}

// ContentSecurityPolicy returns the policy of a page served over r. Its
// connect-src names the page's own origin and the cluster's origins, so the
// app's calls and streams, which fail over to other nodes, reach the
// cluster's members and nothing else (no "ws:" or "wss:" wildcard).
//
// origins are the cluster's origins besides the page's own: members'
// advertised HTTP addresses ("host:port", which take the page's scheme) and
// configured origins ("https://host:port"). Each is allowed in its HTTP and
// its WebSocket form. A page served over TLS gets https: and wss: sources
// only: it never sends a token in clear text to another origin. An address
// with an unspecified host (0.0.0.0, [::]) names the page's host, as the
// app reads it.
func ContentSecurityPolicy(r *http.Request, origins []string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	pageHost := ""
	srcs := []string{"'self'"}
	seen := map[string]bool{}
	if ok, _ := validHost(r.Host); ok {
		pageHost = strings.ToLower(r.Host)
		seen[scheme+"://"+pageHost] = true
		srcs = append(srcs, wsScheme(scheme)+"://"+pageHost) // 'self' does not cover WebSockets in every browser
	}
	for _, o := range origins {
		s, host, ok := origin(o, scheme, pageHost)
		if !ok || (scheme == "https" && s != "https") || seen[s+"://"+host] {
			continue
		}
		seen[s+"://"+host] = true
		srcs = append(srcs, s+"://"+host, wsScheme(s)+"://"+host)
	}
	return policyHead + strings.Join(srcs, " ") + policyTail
}

// origin splits one of the cluster's origins into a scheme and a lower-case
// host[:port]: "host:port" takes the page's scheme, "http://host[:port]"
// and "https://host[:port]" keep theirs. An unspecified host (0.0.0.0, [::])
// becomes the page's host name. ok is false for anything else.
func origin(o, pageScheme, pageHost string) (scheme, host string, ok bool) {
	o = strings.ToLower(strings.TrimRight(o, "/"))
	if !strings.Contains(o, "://") {
		if ok, port := validHost(o); !ok || !port {
			return "", "", false
		}
		h, port, _ := net.SplitHostPort(o)
		if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
			name, _, err := net.SplitHostPort(pageHost)
			if err != nil {
				name = pageHost
			}
			if name == "" {
				return "", "", false
			}
			o = net.JoinHostPort(strings.Trim(name, "[]"), port)
		}
		return pageScheme, o, true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", false
	}
	if ok, _ := validHost(u.Host); !ok {
		return "", "", false
	}
	return u.Scheme, u.Host, true
}

// wsScheme is the WebSocket scheme of an HTTP scheme.
func wsScheme(scheme string) string {
	if scheme == "https" {
		return "wss"
	}
	return "ws"
}

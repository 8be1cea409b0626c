package node

import (
	"net"
	"testing"

	"github.com/parley-chat/parley/internal/config"
)

// fakeListener is a net.Listener that only has an address.
type fakeListener struct {
	net.Listener
	addr string
}

func (l fakeListener) Addr() net.Addr {
	a, err := net.ResolveTCPAddr("tcp", l.addr)
	if err != nil {
		panic(err)
	}
	return a
}

// TestNode_LinksAdvertise: the links listener is advertised at its actual
// address, with the advertised HTTP host in place of an unspecified one.
func TestNode_LinksAdvertise(t *testing.T) {
	for _, tc := range []struct {
		name, links, http, advertiseHTTP, want string
	}{
		{"no links listener", "", "10.0.0.3:7070", "", ""},
		{"specific host", "10.0.0.9:8080", "10.0.0.3:7070", "", "10.0.0.9:8080"},
		{"IPv4 wildcard", "0.0.0.0:8080", "10.0.0.3:7070", "", "10.0.0.3:8080"},
		{"IPv6 wildcard", "[::]:8080", "10.0.0.3:7070", "", "10.0.0.3:8080"},
		{"wildcard, advertised HTTP", "[::]:8080", "[::]:7070", "par-1.internal:7070", "par-1.internal:8080"},
		{"wildcard, IPv6 HTTP", "0.0.0.0:8080", "[fd00::3]:7070", "", "[fd00::3]:8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &Node{cfg: config.Config{AdvertiseHTTP: tc.advertiseHTTP}, httpLn: fakeListener{addr: tc.http}}
			if tc.links != "" {
				n.links.ln = fakeListener{addr: tc.links}
			}
			if got := n.linksAdvertise(); got != tc.want {
				t.Errorf("linksAdvertise() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNode_LinksAdvertise_PortZero: --links with port 0 advertises the port
// the system picked.
func TestNode_LinksAdvertise_PortZero(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	n := &Node{httpLn: fakeListener{addr: "10.0.0.3:7070"}}
	n.links.ln = ln
	if got, want := n.linksAdvertise(), ln.Addr().String(); got != want {
		t.Errorf("linksAdvertise() = %q, want %q", got, want)
	}
}

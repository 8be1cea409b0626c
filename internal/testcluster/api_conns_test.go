package testcluster_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/testcluster"
)

// TestAPI_ConnectionsPerAddressAreCapped: with --limit-conns-per-address
// 3, one client address holds at most three connections to a node, the API
// and links listeners counted together. A fourth is closed before it gets
// an answer, the three keep being served, the refusal is counted in
// /metrics, and once one closes a new one is served.
func TestAPI_ConnectionsPerAddressAreCapped(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{
		Nodes:             1,
		ReplicationFactor: 1,
		NoSync:            true,
		Configure: func(_ int, cfg *config.Config) {
			cfg.LinksAddr = "127.0.0.1:0"
			cfg.ConnsPerAddress = 3
		},
	})
	api, links := c.Node(0).HTTPAddr(), c.Node(0).LinksAddr()

	held := []*rawConn{dialRaw(t, api), dialRaw(t, api), dialRaw(t, links)}
	for i, rc := range held {
		if code, ok := rc.get(t, "/healthz"); !ok {
			t.Fatalf("connection %d within the cap got no answer", i+1)
		} else if i < 2 && code != http.StatusOK {
			t.Fatalf("connection %d: /healthz = %d", i+1, code)
		}
	}
	for _, addr := range []string{api, links} {
		if code, ok := dialRaw(t, addr).get(t, "/healthz"); ok {
			t.Fatalf("a fourth connection from one address, to %s, was answered %d; want it closed", addr, code)
		}
	}
	for i, rc := range held { // the three are still served, keep-alive
		if _, ok := rc.get(t, "/healthz"); !ok {
			t.Fatalf("connection %d lost after the refusals", i+1)
		}
	}

	held[0].Close()
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		rc := dialRaw(t, api)
		if code, ok := rc.get(t, "/metrics"); ok && code == http.StatusOK {
			body = rc.body
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection served within 10 s after one of the three closed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Two refusals above, and maybe more while the node had not yet seen
	// the close.
	var refused int
	if _, err := fmt.Sscanf(grepLines(body, `parley_client_connections_refused_total{cap="per_address"}`),
		`parley_client_connections_refused_total{cap="per_address"} %d`, &refused); err != nil || refused < 2 ||
		!strings.Contains(body, "\nparley_client_connections 3\n") {
		t.Errorf("/metrics: want 3 open and at least 2 refused per address; it has:\n%s", grepLines(body, "parley_client_connections"))
	}
}

// rawConn is one client connection that sends requests one at a time.
type rawConn struct {
	c    net.Conn
	r    *bufio.Reader
	body string // the last answer's body
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{c: c, r: bufio.NewReader(c)}
}

// get sends GET path and reads the answer: its status, or false when the
// server closed the connection instead.
func (rc *rawConn) get(t *testing.T, path string) (int, bool) {
	t.Helper()
	_ = rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(rc.c, "GET "+path+" HTTP/1.1\r\nHost: parley\r\n\r\n"); err != nil {
		return 0, false
	}
	resp, err := http.ReadResponse(rc.r, nil)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("GET %s: neither answered nor closed within 10 s", path)
		}
		return 0, false
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return 0, false
	}
	rc.body = string(b)
	return resp.StatusCode, true
}

// Close closes the connection.
func (rc *rawConn) Close() { _ = rc.c.Close() }

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

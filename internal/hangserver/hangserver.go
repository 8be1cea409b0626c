// Package hangserver is a test server that accepts connections and never
// answers: a node stopped with SIGSTOP, or wedged, as a client sees it.
package hangserver

import (
	"net"
	"sync/atomic"
	"testing"
)

// Start listens on a loopback port, accepts every connection and holds it
// unanswered until the test ends. It returns the base URL
// ("http://127.0.0.1:PORT") and a count of the connections accepted.
func Start(t testing.TB) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := new(atomic.Int32)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var held []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					_ = c.Close()
				}
				return
			}
			conns.Add(1)
			held = append(held, c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return "http://" + ln.Addr().String(), conns
}

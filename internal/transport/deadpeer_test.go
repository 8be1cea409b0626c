package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"github.com/parley-chat/parley/internal/compat"
	"io"
	"net"
	"testing"
	"time"
)

// mustRawDial connects to addr and performs the handshake for proto by
// hand, returning the connection and the acknowledgement status.
func mustRawDial(t *testing.T, addr string, proto byte, h hello) (net.Conn, *bufio.Reader, byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Write(appendHello([]byte{proto}, h)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	p, err := readFrame(br, nil, maxHandshakeFrame)
	if err != nil || len(p) == 0 {
		t.Fatalf("read ack: %v", err)
	}
	return c, br, p[0]
}

// mustSilentPeer starts a listener that accepts handshakes and then never
// writes again, like a peer whose process hangs.
func mustSilentPeer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			_, _ = c.Write(appendAck(nil, ackOK, "silent"))
		}
	}()
	return ln.Addr().String()
}

func TestTransport_DeadPeer(t *testing.T) {
	t.Run("silent callee fails calls without a deadline", func(t *testing.T) {
		tm := testTiming()
		tm.idleRead = 300 * time.Millisecond
		a, err := newTransport(Config{ListenAddr: "127.0.0.1:0", NodeID: "a"}, newTestHandler(), tm)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		start := time.Now()
		_, err = a.Call(context.Background(), mustSilentPeer(t), "echo", nil)
		mustErrorIs(t, err, ErrUnreachable)
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("noticed the dead peer after %v", d)
		}
	})
	t.Run("slow but live callee is not mistaken for dead", func(t *testing.T) {
		tm := testTiming()
		tm.idleRead = 300 * time.Millisecond
		a, err := newTransport(Config{ListenAddr: "127.0.0.1:0", NodeID: "a"}, newTestHandler(), tm)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		hb := newTestHandler()
		hb.call = func(ctx context.Context, _, method string, body []byte) ([]byte, error) {
			if method == "slow" {
				time.Sleep(700 * time.Millisecond)
			}
			return body, nil
		}
		b, err := newTransport(Config{ListenAddr: "127.0.0.1:0", NodeID: "b"}, hb, tm)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		stop := make(chan struct{})
		busy := make(chan struct{})
		go func() { // keep the connection busy writing requests
			defer close(busy)
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
					_, _ = a.Call(context.Background(), b.Addr(), "fast", nil)
				}
			}
		}()
		_, err = a.Call(context.Background(), b.Addr(), "slow", []byte("x"))
		close(stop)
		<-busy
		if err != nil {
			t.Fatalf("slow call failed: %v", err)
		}
	})
	t.Run("silent raft sender is disconnected", func(t *testing.T) {
		tm := testTiming()
		tm.idleRead = 300 * time.Millisecond
		b, err := newTransport(Config{ListenAddr: "127.0.0.1:0", NodeID: "b", ClusterID: func() string { return "c1" }}, newTestHandler(), tm)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		c, br, status := mustRawDial(t, b.Addr(), protoRaft, ourHello("x", "x:1", "c1"))
		if status != ackOK {
			t.Fatalf("status %d", status)
		}
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Fatalf("read: %v, want EOF from the receiver closing", err)
		}
	})
	t.Run("oversize frame closes the connection", func(t *testing.T) {
		b := mustNew(t, node{id: "b", cluster: "c1"}, newTestHandler())
		for _, proto := range []byte{protoRaft, protoCall} {
			c, br, status := mustRawDial(t, b.Addr(), proto, ourHello("x", "x:1", "c1"))
			if status != ackOK {
				t.Fatalf("status %d", status)
			}
			if _, err := c.Write(binary.BigEndian.AppendUint32(nil, maxRaftFrame+1)); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
				t.Fatalf("protocol %c: read %v, want EOF", proto, err)
			}
		}
	})
	t.Run("a protocol range that does not meet ours is refused", func(t *testing.T) {
		b := mustNew(t, node{id: "b", cluster: "c1"}, newTestHandler())
		_, _, status := mustRawDial(t, b.Addr(), protoCall, hello{minVersion: 98, maxVersion: 99, nodeID: "x", clusterID: "c1"})
		if status != ackRefused {
			t.Fatalf("status %d, want refused", status)
		}
	})
	t.Run("a newer peer that still speaks our protocol is accepted", func(t *testing.T) {
		b := mustNew(t, node{id: "b", cluster: "c1"}, newTestHandler())
		c, _, status := mustRawDial(t, b.Addr(), protoCall, hello{minVersion: compat.Protocol, maxVersion: compat.Protocol + 1, nodeID: "x", clusterID: "c1"})
		if status != ackOK {
			t.Fatalf("status %d, want accepted", status)
		}
		_ = c.Close()
	})
}

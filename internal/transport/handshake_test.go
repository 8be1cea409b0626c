package transport

import (
	"errors"
	"fmt"
	"github.com/parley-chat/parley/internal/compat"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
)

func TestDecodeHello(t *testing.T) {
	t.Run("round trip", func(t *testing.T) {
		want := ourHello("n1", "10.0.0.1:7000", "c")
		want.boot = Boot{Incarnation: "inc", Generation: 300, ID: "b1"}
		got, err := decodeHello(appendHello(nil, want)[frameHeaderLen:])
		if err != nil || got != want {
			t.Fatalf("got %+v, %v; want %+v", got, err, want)
		}
	})
	t.Run("a hello without a protocol range speaks one version", func(t *testing.T) {
		// What builds from before the range was sent send: one version
		// byte, no maxVersion, no boot.
		p := append([]byte(helloMagic), 1)
		for _, s := range []string{"n1", "a:1", "c"} {
			p = appendString(p, s)
		}
		got, err := decodeHello(p)
		if err != nil || got.minVersion != 1 || got.maxVersion != 1 {
			t.Fatalf("got %+v, %v; want protocol 1 to 1", got, err)
		}
		// And such a build, which accepts its own version only in that
		// byte, reads ours as the oldest we speak.
		ours := appendHello(nil, ourHello("n1", "a:1", "c"))[frameHeaderLen:]
		if v := ours[len(helloMagic)]; v != compat.MinProtocol {
			t.Fatalf("our version byte %d, want MinProtocol %d", v, compat.MinProtocol)
		}
	})
	bad := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"bad magic", []byte("XXXX\x01")},
		{"truncated", appendHello(nil, hello{minVersion: 1, nodeID: "node"})[frameHeaderLen : frameHeaderLen+7]},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeHello(tc.in); !errors.Is(err, errCorrupt) {
				t.Fatalf("got %v, want errCorrupt", err)
			}
		})
	}
}

func FuzzDecodeHello(f *testing.F) {
	f.Add(appendHello(nil, hello{minVersion: 1, maxVersion: 1, nodeID: "a", addr: "b", clusterID: "c"})[frameHeaderLen:])
	f.Fuzz(func(t *testing.T, p []byte) {
		h, err := decodeHello(p)
		if err != nil {
			return
		}
		again, err := decodeHello(appendHello(nil, h)[frameHeaderLen:])
		if err != nil || again != h {
			t.Fatalf("re-decode: %+v, %v; want %+v", again, err, h)
		}
	})
}

func TestTransport_Handshake(t *testing.T) {
	t.Run("call to another cluster is refused", func(t *testing.T) {
		a := mustNew(t, node{id: "a", cluster: "c1"}, newTestHandler())
		b := mustNew(t, node{id: "b", cluster: "c2"}, newTestHandler())
		err := callErr(a, b.Addr())
		mustErrorIs(t, err, ErrClusterMismatch)
		if !strings.Contains(err.Error(), "cluster id mismatch:") || !strings.Contains(err.Error(), `"c2"`) {
			t.Fatalf("error %q does not explain the mismatch", err)
		}
	})
	t.Run("raft to another cluster is refused", func(t *testing.T) {
		a := mustNew(t, node{id: "a", cluster: "c1"}, newTestHandler())
		hb := newTestHandler()
		b := mustNew(t, node{id: "b", cluster: "c2"}, hb)
		mustRaftRefused(t, a, b, hb)
	})
	t.Run("node without cluster id may call", func(t *testing.T) {
		a := mustNew(t, node{id: "a"}, newTestHandler())
		b := mustNew(t, node{id: "b", cluster: "c2"}, newTestHandler())
		if got := mustCall(t, a, b.Addr(), "join", []byte("hi")); string(got) != "hi" {
			t.Fatalf("got %q", got)
		}
		if got := mustCall(t, b, a.Addr(), "join", []byte("back")); string(got) != "back" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("node without cluster id may not send raft", func(t *testing.T) {
		a := mustNew(t, node{id: "a"}, newTestHandler())
		hb := newTestHandler()
		b := mustNew(t, node{id: "b", cluster: "c2"}, hb)
		mustRaftRefused(t, a, b, hb)
	})
	t.Run("node without cluster id may not receive raft", func(t *testing.T) {
		a := mustNew(t, node{id: "a", cluster: "c2"}, newTestHandler())
		hb := newTestHandler()
		b := mustNew(t, node{id: "b"}, hb)
		mustRaftRefused(t, a, b, hb)
	})
}

// mustRaftRefused sends Raft messages from a to b and checks that they are
// dropped by a and never reach b's handler.
func mustRaftRefused(t *testing.T, a, b *Transport, hb *testHandler) {
	t.Helper()
	a.SendRaft(b.Addr(), []GroupMessage{{Group: 1, Msg: appMsg(1, nil)}})
	poll.Until(t, 2*time.Second, "raft message dropped", func() bool { return a.Stats().RaftDropped >= 1 })
	time.Sleep(50 * time.Millisecond)
	if n := hb.count(); n != 0 || b.Stats().RaftReceived != 0 {
		t.Fatalf("receiver got %d messages, want none", n)
	}
}

// A peer whose CheckBoot refuses the dialer's boot answers it as stale: the
// dialer's call fails with ErrStaleData, it is told through OnStale with the
// peer's reason, and the peer's handler never sees the call.
func TestTransport_StaleBootRefused(t *testing.T) {
	var told atomic.Value
	boot := Boot{Incarnation: "inc1", Generation: 4, ID: "again"}
	a := mustNew(t, node{id: "a", cluster: "c1"}, newTestHandler(), func(c *Config) {
		c.Boot = func() Boot { return boot }
		c.OnStale = func(reason string) { told.Store(reason) }
	})
	hb := newTestHandler()
	var seen atomic.Value
	b := mustNew(t, node{id: "b", cluster: "c1"}, hb, func(c *Config) {
		c.CheckBoot = func(node string, got Boot) error {
			seen.Store(got)
			if got.Generation <= 4 && got.ID != "first" {
				return fmt.Errorf("node %s restarted from an old copy of its data directory", node)
			}
			return nil
		}
	})
	err := callErr(a, b.Addr())
	mustErrorIs(t, err, ErrStaleData)
	if r, _ := told.Load().(string); !strings.Contains(r, "node a restarted from an old copy") {
		t.Fatalf("OnStale told %q; call error %v", r, err)
	}
	if got, _ := seen.Load().(Boot); got != boot {
		t.Fatalf("CheckBoot saw %+v, want %+v", got, boot)
	}
	boot = Boot{Incarnation: "inc1", Generation: 5, ID: "next"}
	if err := callErr(a, b.Addr()); err != nil {
		t.Fatalf("a newer generation refused: %v", err)
	}
}

package transport

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
)

func TestTransport_SendRaft(t *testing.T) {
	t.Run("in order with groups and contents, batched", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		const n = 2000
		for i := range n {
			a.SendRaft(b.Addr(), []GroupMessage{{Group: uint64(i % 7), Msg: appMsg(uint64(i), []byte(fmt.Sprint(i)))}})
		}
		poll.Until(t, 5*time.Second, "all messages", func() bool { return hb.count() == n && a.Stats().RaftSent == n })
		got := hb.received()
		for i, gm := range got {
			if gm.Group != uint64(i%7) || gm.Msg.Index != uint64(i) || !bytes.Equal(gm.Msg.Entries[0].Data, []byte(fmt.Sprint(i))) {
				t.Fatalf("message %d: group %d index %d data %q", i, gm.Group, gm.Msg.Index, gm.Msg.Entries[0].Data)
			}
		}
		if froms := hb.froms; froms[0] != "a" || froms[n-1] != "a" {
			t.Fatalf("from = %q, want %q", froms[0], "a")
		}
		sa, sb := a.Stats(), b.Stats()
		if sa.RaftSent != n || sb.RaftReceived != n || sa.RaftDropped != 0 {
			t.Fatalf("stats: sent %d received %d dropped %d, want %d %d 0", sa.RaftSent, sb.RaftReceived, sa.RaftDropped, n, n)
		}
		if sa.RaftFramesSent >= n || sb.RaftFramesReceived != sa.RaftFramesSent {
			t.Fatalf("frames sent %d received %d for %d messages: not batched", sa.RaftFramesSent, sb.RaftFramesReceived, n)
		}
		if sa.BytesSent == 0 || sb.BytesReceived == 0 {
			t.Fatalf("byte counters not updated: %+v %+v", sa, sb)
		}
		t.Logf("%d messages in %d frames", n, sa.RaftFramesSent)
	})
	t.Run("one call is one frame", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		msgs := testMessages(500)
		a.SendRaft(b.Addr(), msgs)
		poll.Until(t, 5*time.Second, "all messages", func() bool {
			return hb.count() == len(msgs) && a.Stats().RaftSent == uint64(len(msgs))
		})
		mustEqualMessages(t, hb.received(), msgs)
		if f := a.Stats().RaftFramesSent; f != 1 {
			t.Fatalf("%d frames, want 1", f)
		}
	})
	t.Run("queue bound drops the excess", func(t *testing.T) {
		a := mustNew(t, node{id: "a", cluster: "c1"}, newTestHandler(), func(c *Config) { c.MaxQueuedMessages = 10 })
		a.SendRaft(deadAddr(t), testMessages(100))
		poll.Until(t, 2*time.Second, "all dropped", func() bool { return a.Stats().RaftDropped == 100 })
		if s := a.Stats(); s.RaftSent != 0 {
			t.Fatalf("sent %d to a dead peer", s.RaftSent)
		}
	})
	t.Run("resumes after the peer restarts on the same address", func(t *testing.T) {
		ha, hb := newTestHandler(), newTestHandler()
		a := mustNew(t, node{id: "a", cluster: "c1"}, ha)
		b := mustNew(t, node{id: "b", cluster: "c1"}, hb)
		addr := b.Addr()
		a.SendRaft(addr, []GroupMessage{{Group: 1, Msg: appMsg(1, nil)}})
		poll.Until(t, 2*time.Second, "first message", func() bool { return hb.count() == 1 })
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		// Messages sent while the peer is down are dropped.
		a.SendRaft(addr, []GroupMessage{{Group: 1, Msg: appMsg(2, nil)}})
		hb2 := newTestHandler()
		mustNew(t, node{id: "b", cluster: "c1", addr: addr}, hb2)
		poll.Until(t, 5*time.Second, "delivery after restart", func() bool {
			a.SendRaft(addr, []GroupMessage{{Group: 1, Msg: appMsg(3, nil)}})
			return hb2.count() > 0
		})
	})
	t.Run("idle sender retires and is recreated", func(t *testing.T) {
		ha, hb := newTestHandler(), newTestHandler()
		tm := testTiming()
		tm.senderIdle = 50 * time.Millisecond
		a, err := newTransport(Config{ListenAddr: "127.0.0.1:0", NodeID: "a", ClusterID: func() string { return "c1" }}, ha, tm)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		b := mustNew(t, node{id: "b", cluster: "c1"}, hb)
		a.SendRaft(b.Addr(), testMessages(1))
		poll.Until(t, 2*time.Second, "sender retired", func() bool {
			a.mu.RLock()
			defer a.mu.RUnlock()
			return len(a.senders) == 0
		})
		a.SendRaft(b.Addr(), testMessages(1))
		poll.Until(t, 2*time.Second, "second message", func() bool { return hb.count() == 2 })
	})
	t.Run("after close messages are dropped", func(t *testing.T) {
		a, b, _, _ := mustPair(t)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		a.SendRaft(b.Addr(), testMessages(3))
		if d := a.Stats().RaftDropped; d != 3 {
			t.Fatalf("dropped %d, want 3", d)
		}
	})
}

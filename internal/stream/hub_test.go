package stream

import (
	"context"
	"errors"
	"sync"
	"testing"
	"unsafe"

	"github.com/parley-chat/parley/internal/chat"
)

func TestHub_PublishFanOutInOrder(t *testing.T) {
	src := newMemSource()
	h := newTestHub(t, src, Config{})
	h.Advance("r", 0)
	var cs []*collector
	for _, u := range []string{"a", "b", "c"} {
		s := h.Connect(u)
		h.Subscribe(s, "r", 0)
		cs = append(cs, collect(t, s))
	}
	for range 10 {
		h.Publish("r", src.append("r", 10))
	}
	for _, c := range cs {
		fs := c.waitFor(t, 101)
		if seq, i := readyAt(t, fs, "r"); seq != 0 || i != 0 {
			t.Fatalf("ready(%d) at %d, want ready(0) first: %v", seq, i, fs)
		}
		checkEvents(t, fs, "r", 1, 100)
	}
}

func TestHub_PublishEncodesOnce(t *testing.T) {
	src := newMemSource()
	h := newTestHub(t, src, Config{})
	h.Advance("r", 0)
	alice, bob, carol, dave := h.Connect("alice"), h.Connect("Bob"), h.Connect("carol"), h.Connect("dave")
	for _, s := range []*Subscriber{alice, bob, carol, dave} {
		h.Subscribe(s, "r", 0)
	}
	ca, cb, cc, cd := collect(t, alice), collect(t, bob), collect(t, carol), collect(t, dave)
	h.Publish("r", []chat.Event{
		src.appendEvent("r", chat.Event{Kind: chat.KindMessage, Sender: "alice", Text: "hi"}),
		src.appendEvent("r", chat.Event{Kind: chat.KindWhisper, Sender: "alice", To: []string{"bob"}, Text: "psst"}),
	})
	a, b, c, d := framesOf(t, ca, 3), framesOf(t, cb, 3), framesOf(t, cc, 3), framesOf(t, cd, 3)
	t.Run("message shared by all", func(t *testing.T) {
		for _, x := range [][][]byte{b, c, d} {
			if !sameBytes(a[1], x[1]) {
				t.Fatal("the message was encoded more than once")
			}
		}
	})
	t.Run("whisper full for sender and recipient", func(t *testing.T) {
		if !sameBytes(a[2], b[2]) || string(a[2]) != `{"type":"event","room":"r","seq":2,"ts":0,"kind":"whisper","sender":"alice","text":"psst","to":["bob"]}` {
			t.Fatalf("sender got %s, recipient %s", a[2], b[2])
		}
	})
	t.Run("whisper hidden and shared for others", func(t *testing.T) {
		if !sameBytes(c[2], d[2]) || string(c[2]) != `{"type":"event","room":"r","seq":2,"ts":0,"kind":"hidden"}` {
			t.Fatalf("others got %s and %s", c[2], d[2])
		}
	})
}

// framesOf waits for n frames and returns their bytes.
func framesOf(t *testing.T, c *collector, n int) [][]byte {
	t.Helper()
	c.waitFor(t, n)
	_, raw, _ := c.snapshot()
	return raw
}

// sameBytes reports whether a and b share their backing array.
func sameBytes(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

func TestHub_SlowConsumer(t *testing.T) {
	src := newMemSource()
	h := newTestHub(t, src, Config{MaxFrames: 8})
	h.Advance("r", 0)
	slow, fast := h.Connect("slow"), h.Connect("fast")
	h.Subscribe(slow, "r", 0)
	h.Subscribe(fast, "r", 0)
	cf := collect(t, fast)
	for range 20 {
		h.Publish("r", src.append("r", 1))
		cf.waitFor(t, len(src.logs["r"])+1) // fast keeps up
	}
	if _, err := slow.Next(context.Background(), nil); !errors.Is(err, ErrSlowConsumer) {
		t.Fatalf("slow subscriber's Next: %v, want ErrSlowConsumer", err)
	}
	h.Disconnect(slow)
	checkEvents(t, cf.waitFor(t, 21), "r", 1, 20)
	if st := h.Stats(); st.SlowConsumers != 1 || st.Subscribers != 1 {
		t.Fatalf("stats %+v, want 1 slow consumer and 1 subscriber left", st)
	}
}

func TestHub_HoldUntilFeedCatchesUp(t *testing.T) {
	src := newMemSource()
	h := newTestHub(t, src, Config{})
	s := h.Connect("a")
	src.append("r", 5)
	h.Subscribe(s, "r", 10) // resumed after seq 10, seen through a node further ahead
	h.Advance("r", 5)       // this node's feed is at 5
	c := collect(t, s)
	h.Publish("r", src.append("r", 5)) // 6..10: the subscriber has them
	h.Publish("r", src.append("r", 2)) // 11, 12
	fs := c.waitFor(t, 3)
	if seq, i := readyAt(t, fs, "r"); seq != 10 || i != 0 {
		t.Fatalf("ready(%d) at %d, want ready(10) first: %v", seq, i, fs)
	}
	checkEvents(t, fs, "r", 11, 12)
}

func TestHub_ResumeCatchesUpWhilePublishing(t *testing.T) {
	src := newMemSource()
	src.page = 7 // many small catch-up reads, interleaved with publishing
	h := newTestHub(t, src, Config{})
	s0 := h.Connect("watcher") // keeps the room watched
	h.Subscribe(s0, "r", 0)
	h.Publish("r", src.append("r", 50))
	s := h.Connect("a")
	h.Subscribe(s, "r", 20)
	c := collect(t, s)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 50 {
			h.Publish("r", src.append("r", 1))
		}
	}()
	wg.Wait()
	fs := c.waitFor(t, 81)
	checkEvents(t, fs, "r", 21, 100)
	if seq, i := readyAt(t, fs, "r"); seq < 50 || fs[i-1].Seq != seq {
		t.Fatalf("ready(%d) does not follow event %d: %v", seq, seq, fs)
	}
}

func TestHub_GapFilledFromSource(t *testing.T) {
	src := newMemSource()
	h := newTestHub(t, src, Config{})
	s := h.Connect("a")
	h.Subscribe(s, "r", 0)
	h.Advance("r", 0)
	c := collect(t, s)
	h.Publish("r", src.append("r", 3))
	src.append("r", 4)                 // 4..7 applied, never published (a feed restart)
	h.Publish("r", src.append("r", 1)) // 8
	h.Publish("r", src.append("r", 1)) // 9
	checkEvents(t, c.waitFor(t, 10), "r", 1, 9)
}

func TestHub_HistoryCompacted(t *testing.T) {
	src := newMemSource()
	h := newTestHub(t, src, Config{})
	src.append("r", 30)
	src.first["r"] = 21
	s := h.Connect("a")
	h.Subscribe(s, "r", 5)
	h.Advance("r", 30) // the feed reports its position once watching
	c := collect(t, s)
	fs := c.waitFor(t, 1)
	if fs[0].Type != TypeError || fs[0].Code != CodeHistoryCompacted || fs[0].Room != "r" {
		t.Fatalf("frames %v, want a history_compacted error", fs)
	}
	if src.watching("r") != 0 {
		t.Fatal("the room is still watched after its only subscription failed")
	}
	h.Subscribe(s, "r", 20) // resuming right at the retained history works
	h.Advance("r", 30)
	checkEvents(t, c.waitFor(t, 12), "r", 21, 30)
}

func TestHub_WatchFollowsSubscriptions(t *testing.T) {
	src := newMemSource()
	h := newTestHub(t, src, Config{})
	a, b := h.Connect("a"), h.Connect("b")
	h.Subscribe(a, "r", 0)
	h.Subscribe(b, "r", 0)
	h.Subscribe(a, "r", 0) // again: replaces, no second Watch
	if w := src.watching("r"); w != 1 {
		t.Fatalf("watched %d times, want 1", w)
	}
	h.Unsubscribe(a, "r")
	if w := src.watching("r"); w != 1 {
		t.Fatalf("watched %d times after one of two left, want 1", w)
	}
	h.Disconnect(b)
	if w := src.watching("r"); w != 0 || h.Watching("r") {
		t.Fatalf("still watched (%d) after the last subscriber left", w)
	}
}

func TestHub_Close(t *testing.T) {
	src := newMemSource()
	h := NewHub(Config{Source: src})
	s := h.Connect("a")
	h.Subscribe(s, "r", 3) // holds
	c := collect(t, s)
	h.Close()
	<-c.done
	if _, _, err := c.snapshot(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
	if s2 := h.Connect("b"); s2 == nil {
		t.Fatal("Connect after Close returned nil")
	} else if _, err := s2.Next(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next of a subscriber connected after Close: %v", err)
	}
}

func BenchmarkHub_Publish(b *testing.B) {
	for _, subs := range []int{1, 100} {
		b.Run(fmtInt(subs)+"subscribers", func(b *testing.B) {
			src := newMemSource()
			h := NewHub(Config{Source: src, MaxFrames: 1 << 20, MaxBytes: 1 << 30})
			defer h.Close()
			h.Advance("r", 0)
			ss := make([]*Subscriber, subs)
			for i := range ss {
				ss[i] = h.Connect("u" + fmtInt(i))
				h.Subscribe(ss[i], "r", 0)
			}
			events := make([]chat.Event, b.N)
			for i := range events {
				events[i] = chat.Event{Room: "r", Seq: uint64(i + 1), Ts: int64(i), Kind: chat.KindMessage, Sender: "alice", Text: "a message of some two hundred characters would be typical; this one is shorter"}
			}
			var buf [][]byte
			b.ReportAllocs()
			b.ResetTimer()
			for i := range events {
				h.Publish("r", events[i:i+1])
				if i%512 == 511 {
					for _, s := range ss {
						buf, _ = s.Next(context.Background(), buf)
					}
				}
			}
		})
	}
}

func fmtInt(i int) string {
	return string(appendInt(nil, i))
}

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

func TestHub_LeavingPrivateRoomEndsSubscription(t *testing.T) {
	for _, private := range []bool{true, false} {
		t.Run(map[bool]string{true: "private", false: "public"}[private], func(t *testing.T) {
			src := newMemSource()
			h := newTestHub(t, src, Config{})
			bob, carol := h.Connect("Bob"), h.Connect("carol")
			h.Subscribe(bob, "r", 0)
			h.Subscribe(carol, "r", 0)
			h.SetPrivate("r", private)
			h.Advance("r", 0)
			cb, cc := collect(t, bob), collect(t, carol)
			h.Publish("r", []chat.Event{
				src.appendEvent("r", chat.Event{Kind: chat.KindMessage, Sender: "carol", Text: "before"}),
				src.appendEvent("r", chat.Event{Kind: chat.KindLeave, Sender: "bob"}),
				src.appendEvent("r", chat.Event{Kind: chat.KindMessage, Sender: "carol", Text: "after"}),
			})
			checkEvents(t, cc.waitFor(t, 4), "r", 1, 3)
			if !private {
				checkEvents(t, cb.waitFor(t, 4), "r", 1, 3)
				return
			}
			fs := cb.waitFor(t, 4)
			checkEvents(t, fs, "r", 1, 2)
			if f := fs[3]; f.Type != TypeError || f.Code != CodeForbidden {
				t.Fatalf("bob's frames %v, want his leave then forbidden", fs)
			}
			h.Publish("r", src.append("r", 1))
			checkEvents(t, cc.waitFor(t, 5), "r", 1, 4)
			if fs, _, _ := cb.snapshot(); len(fs) != 4 {
				t.Fatalf("bob got %v after leaving", fs)
			}
		})
	}
}

// A room that turns private while watched sends no later event to anyone:
// every subscriber's connection resets (slow consumer) and must subscribe
// again through the check that refuses non-members. Turning public, or
// the first report, resets no one.
func TestHub_RoomTurningPrivateResetsSubscribers(t *testing.T) {
	src := newMemSource()
	h := newTestHub(t, src, Config{})
	member, reader := h.Connect("member"), h.Connect("reader")
	h.Subscribe(member, "r", 0)
	h.Subscribe(reader, "r", 0)
	h.SetPrivate("r", false) // the feed's first report
	h.Advance("r", 0)
	cr := collect(t, reader)
	h.Publish("r", src.append("r", 1))
	checkEvents(t, cr.waitFor(t, 2), "r", 1, 1)

	h.SetPrivate("r", true)
	h.Publish("r", []chat.Event{
		src.appendEvent("r", chat.Event{Kind: chat.KindSettings, Sender: "member", Changed: []string{"access"}}),
		src.appendEvent("r", chat.Event{Kind: chat.KindMessage, Sender: "member", Text: "members only"}),
	})
	for _, s := range []*Subscriber{member, reader} {
		if _, err := s.Next(context.Background(), nil); !errors.Is(err, ErrSlowConsumer) {
			t.Fatalf("%s's Next after the room turned private: %v, want ErrSlowConsumer", s.User(), err)
		}
	}
	if fs, _, _ := cr.snapshot(); len(fs) != 2 {
		t.Fatalf("the reader got %v after the room turned private", fs)
	}

	other := h.Connect("other")
	h.Subscribe(other, "r", 3)
	h.SetPrivate("r", true)  // no change
	h.SetPrivate("r", false) // turning public resets no one
	h.Publish("r", src.append("r", 1))
	checkEvents(t, collect(t, other).waitFor(t, 2), "r", 4, 4)
	if st := h.Stats(); st.SlowConsumers != 2 {
		t.Fatalf("stats %+v, want the 2 reset subscribers counted as slow consumers", st)
	}
}

func TestHub_KickOrBanEndsSubscription(t *testing.T) {
	cases := []struct {
		name    string
		kind    string
		private bool
		ends    bool
	}{
		{"ban from a public room", chat.KindBan, false, true},
		{"ban from a private room", chat.KindBan, true, true},
		{"kick from a private room", chat.KindKick, true, true},
		{"kick from a public room: may still read", chat.KindKick, false, false},
		{"mute: may still read", chat.KindMute, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newMemSource()
			h := newTestHub(t, src, Config{})
			bob, carol := h.Connect("Bob"), h.Connect("carol")
			h.Subscribe(bob, "r", 0)
			h.Subscribe(carol, "r", 0)
			h.SetPrivate("r", tc.private)
			h.Advance("r", 0)
			cb, cc := collect(t, bob), collect(t, carol)
			h.Publish("r", []chat.Event{
				src.appendEvent("r", chat.Event{Kind: tc.kind, Sender: "carol", User: "bob"}),
				src.appendEvent("r", chat.Event{Kind: chat.KindMessage, Sender: "carol", Text: "after"}),
			})
			checkEvents(t, cc.waitFor(t, 3), "r", 1, 2)
			if !tc.ends {
				checkEvents(t, cb.waitFor(t, 3), "r", 1, 2)
				return
			}
			fs := cb.waitFor(t, 3)
			checkEvents(t, fs, "r", 1, 1)
			if f := fs[2]; f.Type != TypeError || f.Code != CodeForbidden {
				t.Fatalf("bob's frames %v, want the event about him then forbidden", fs)
			}
		})
	}
}

package transport

import (
	"context"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
)

func TestFaults_Isolate(t *testing.T) {
	t.Run("drops both directions until healed", func(t *testing.T) {
		a, b, ha, hb := mustPair(t)
		// Establish connections both ways first, so isolation must also cut
		// live connections.
		mustCall(t, a, b.Addr(), "echo", nil)
		mustCall(t, b, a.Addr(), "echo", nil)
		a.SendRaft(b.Addr(), testMessages(1))
		b.SendRaft(a.Addr(), testMessages(1))
		poll.Until(t, 2*time.Second, "warm-up messages", func() bool { return ha.count() == 1 && hb.count() == 1 })

		a.Faults().Isolate(b.Addr())
		mustErrorIs(t, callErr(a, b.Addr()), ErrUnreachable)
		mustErrorIs(t, callErr(b, a.Addr()), ErrUnreachable)
		mustErrorIs(t, callErr(b, a.Addr()), ErrUnreachable) // after redial too
		a.SendRaft(b.Addr(), testMessages(5))
		for range 5 {
			b.SendRaft(a.Addr(), testMessages(5))
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		if ha.count() != 1 || hb.count() != 1 {
			t.Fatalf("isolated nodes exchanged raft messages: a got %d, b got %d", ha.count(), hb.count())
		}

		a.Faults().Heal(b.Addr())
		mustCall(t, a, b.Addr(), "echo", nil)
		poll.Until(t, 2*time.Second, "call from b after heal", func() bool { return callErr(b, a.Addr()) == nil })
		poll.Until(t, 2*time.Second, "raft after heal", func() bool {
			a.SendRaft(b.Addr(), testMessages(1))
			b.SendRaft(a.Addr(), testMessages(1))
			return ha.count() > 1 && hb.count() > 1
		})
	})
	t.Run("by node id", func(t *testing.T) {
		a, b, _, _ := mustPair(t)
		mustCall(t, a, b.Addr(), "echo", nil) // a learns b's id from the handshake
		a.Faults().Isolate("b")
		mustErrorIs(t, callErr(b, a.Addr()), ErrUnreachable)
		mustErrorIs(t, callErr(a, b.Addr()), ErrUnreachable)
		a.Faults().HealAll()
		mustCall(t, b, a.Addr(), "echo", nil)
		mustCall(t, a, b.Addr(), "echo", nil)
	})
	t.Run("isolate all", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		a.Faults().IsolateAll()
		mustErrorIs(t, callErr(a, b.Addr()), ErrUnreachable)
		mustErrorIs(t, callErr(b, a.Addr()), ErrUnreachable)
		a.SendRaft(b.Addr(), testMessages(3))
		if d := a.Stats().RaftDropped; d != 3 {
			t.Fatalf("dropped %d, want 3", d)
		}
		a.Faults().HealAll()
		mustCall(t, a, b.Addr(), "echo", nil)
		poll.Until(t, 2*time.Second, "raft after heal", func() bool {
			a.SendRaft(b.Addr(), testMessages(1))
			return hb.count() > 0
		})
	})
}

func TestFaults_SetDropRate(t *testing.T) {
	a, b, _, hb := mustPair(t)
	a.Faults().SetDropRate(1)
	a.SendRaft(b.Addr(), testMessages(100))
	if d := a.Stats().RaftDropped; d != 100 {
		t.Fatalf("dropped %d, want 100", d)
	}
	a.Faults().SetDropRate(0.5)
	a.SendRaft(b.Addr(), testMessages(1000))
	a.Faults().SetDropRate(0)
	poll.Until(t, 2*time.Second, "surviving messages", func() bool {
		return uint64(hb.count())+a.Stats().RaftDropped == 1100
	})
	if n := hb.count(); n < 300 || n > 700 {
		t.Fatalf("%d of 1000 delivered at drop rate 0.5", n)
	}
}

func TestFaults_SetDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	t.Run("raft", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		a.SendRaft(b.Addr(), testMessages(1)) // connect first
		poll.Until(t, 2*time.Second, "first message", func() bool { return hb.count() == 1 })
		a.Faults().SetDelay(delay)
		start := time.Now()
		for i := range 20 {
			a.SendRaft(b.Addr(), []GroupMessage{{Group: 1, Msg: appMsg(uint64(i), nil)}})
		}
		poll.Until(t, 2*time.Second, "delayed messages", func() bool { return hb.count() == 21 })
		if d := time.Since(start); d < delay {
			t.Fatalf("delivered after %v, want at least %v", d, delay)
		}
		for i, gm := range hb.received()[1:] {
			if gm.Msg.Index != uint64(i) {
				t.Fatalf("message %d has index %d: order lost", i, gm.Msg.Index)
			}
		}
	})
	t.Run("calls", func(t *testing.T) {
		a, b, _, _ := mustPair(t)
		a.Faults().SetDelay(delay)
		start := time.Now()
		mustCall(t, a, b.Addr(), "echo", nil)
		if d := time.Since(start); d < delay {
			t.Fatalf("call took %v, want at least %v", d, delay)
		}
		ctx, cancel := context.WithTimeout(context.Background(), delay/3)
		defer cancel()
		_, err := a.Call(ctx, b.Addr(), "echo", nil)
		mustErrorIs(t, err, context.DeadlineExceeded)
	})
}

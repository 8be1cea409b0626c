package transport

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
)

// A call that may go elsewhere (transport.WithDialWait) stops waiting for
// a connection to a peer whose address no longer answers: it fails as
// unreachable, not after the caller's whole deadline.
func TestTransport_CallWaitsForADialAtMostItsDialWait(t *testing.T) {
	a, b, _, _ := mustPair(t)
	a.Faults().CutDial(b.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := a.Call(WithDialWait(ctx, 50*time.Millisecond), b.Addr(), "echo", []byte("x"))
	if !errors.Is(err, ErrUnreachable) || ctx.Err() != nil {
		t.Fatalf("call to an address that does not answer, with a 50 ms dial wait: %v (caller's context: %v), want unreachable before the caller's deadline", err, ctx.Err())
	}
	// Without it the call waits for the dial, here until its deadline.
	_, err = a.Call(ctx, b.Addr(), "echo", []byte("x"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call without a dial wait: %v, want the caller's deadline", err)
	}
}

// While one of a peer's call connections is being dialed again, and that
// dial hangs (the peer's address stopped answering for new connections),
// the other connection, still up, carries the calls.
func TestTransport_CallUsesALiveConnectionWhileAnotherDials(t *testing.T) {
	a, b, _, _ := mustPair(t)
	// Each call starts the dial of an empty slot it comes to (and uses a
	// live one meanwhile), so a few calls fill every slot.
	p := a.callPeer(b.Addr())
	poll.Until(t, 5*time.Second, "a connection in every slot", func() bool {
		mustCall(t, a, b.Addr(), "echo", []byte("fill every slot"))
		for i := range callConnsPerPeer {
			if p.slots[i].live() == nil {
				return false
			}
		}
		return true
	})
	p.slots[0].conn.fail(errors.New("test: connection lost"))
	a.Faults().CutDial(b.Addr())
	for i := range 2 * callConnsPerPeer {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := a.Call(ctx, b.Addr(), "echo", []byte("x"))
		cancel()
		if err != nil {
			t.Fatalf("call %d while one connection redials and the other is up: %v", i, err)
		}
	}
}

// A peer whose address stopped answering and then came back is called
// again as soon as it is back, not once the dials started while it was
// away have waited out the dial timeout: a dial pending longer than the
// redial interval is joined by a fresh one.
func TestTransport_CallRedialsPastADialThatHangs(t *testing.T) {
	tm := testTiming()
	tm.dial = 30 * time.Second // the hung dials outlast the test
	tm.redial = 100 * time.Millisecond
	a, err := newTransport(Config{ListenAddr: "127.0.0.1:0", NodeID: "a", ClusterID: func() string { return "c1" }}, newTestHandler(), tm)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b := mustNew(t, node{id: "b", cluster: "c1"}, newTestHandler())
	a.Faults().CutDial(b.Addr())
	for range 2 * callConnsPerPeer { // a hung dial in every slot
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := a.Call(WithDialWait(ctx, 20*time.Millisecond), b.Addr(), "echo", []byte("x"))
		cancel()
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("call while dials hang: %v, want unreachable", err)
		}
	}
	a.Faults().Heal(b.Addr())
	poll.Until(t, 10*time.Second, "a call to the peer back at its address, while the first dials still hang", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := a.Call(WithDialWait(ctx, 20*time.Millisecond), b.Addr(), "echo", []byte("x"))
		return err == nil
	})
}

package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
)

func TestTransport_Call(t *testing.T) {
	t.Run("concurrent calls get their own answers", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		hb.call = func(ctx context.Context, from, method string, body []byte) ([]byte, error) {
			return []byte(from + "/" + method + "/" + string(body)), nil
		}
		const n = 200
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				body := fmt.Sprint(i)
				resp, err := a.Call(ctx, b.Addr(), "echo", []byte(body))
				if err == nil && string(resp) != "a/echo/"+body {
					err = fmt.Errorf("call %d got %q", i, resp)
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		b.mu.RLock()
		conns := len(b.conns)
		b.mu.RUnlock()
		if conns > callConnsPerPeer {
			t.Fatalf("%d connections for calls, want at most %d", conns, callConnsPerPeer)
		}
		if s := a.Stats(); s.CallsSent != n || s.CallsFailed != 0 || b.Stats().CallsServed != n {
			t.Fatalf("stats %+v / served %d", s, b.Stats().CallsServed)
		}
	})
	t.Run("remote error surfaces as RemoteError", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		hb.call = func(context.Context, string, string, []byte) ([]byte, error) {
			return nil, errors.New("not the leader")
		}
		err := callErr(a, b.Addr())
		var re *RemoteError
		if !errors.As(err, &re) || re.Message != "not the leader" {
			t.Fatalf("got %v, want RemoteError %q", err, "not the leader")
		}
		if errors.Is(err, ErrUnreachable) {
			t.Fatalf("remote error %v must not wrap ErrUnreachable", err)
		}
	})
	t.Run("context timeout returns promptly and reaches the handler", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		handlerDone := make(chan error, 1)
		hb.call = func(ctx context.Context, _, _ string, _ []byte) ([]byte, error) {
			<-ctx.Done()
			handlerDone <- ctx.Err()
			return nil, ctx.Err()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := a.Call(ctx, b.Addr(), "slow", nil)
		mustErrorIs(t, err, context.DeadlineExceeded)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("returned after %v", d)
		}
		select {
		case <-handlerDone:
		case <-time.After(2 * time.Second):
			t.Fatal("handler context not cancelled")
		}
	})
	t.Run("cancel reaches the handler", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		started, handlerDone := make(chan struct{}), make(chan error, 1)
		hb.call = func(ctx context.Context, _, _ string, _ []byte) ([]byte, error) {
			close(started)
			<-ctx.Done()
			handlerDone <- ctx.Err()
			return nil, ctx.Err()
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-started
			cancel()
		}()
		_, err := a.Call(ctx, b.Addr(), "slow", nil)
		mustErrorIs(t, err, context.Canceled)
		select {
		case err := <-handlerDone:
			mustErrorIs(t, err, context.Canceled)
		case <-time.After(2 * time.Second):
			t.Fatal("handler context not cancelled")
		}
	})
	t.Run("unreachable peer", func(t *testing.T) {
		a := mustNew(t, node{id: "a", cluster: "c1"}, newTestHandler())
		mustErrorIs(t, callErr(a, deadAddr(t)), ErrUnreachable)
	})
	t.Run("peer closing mid-call", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		started := make(chan struct{})
		hb.call = func(ctx context.Context, _, _ string, _ []byte) ([]byte, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		closed := make(chan error, 1)
		go func() {
			<-started
			closed <- b.Close()
		}()
		mustErrorIs(t, callErr(a, b.Addr()), ErrUnreachable)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("call after close", func(t *testing.T) {
		a, b, _, _ := mustPair(t)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		mustErrorIs(t, callErr(a, b.Addr()), ErrClosed)
	})
	t.Run("reconnects after the peer restarts", func(t *testing.T) {
		a := mustNew(t, node{id: "a", cluster: "c1"}, newTestHandler())
		b := mustNew(t, node{id: "b", cluster: "c1"}, newTestHandler())
		addr := b.Addr()
		mustCall(t, a, addr, "echo", nil)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		mustNew(t, node{id: "b", cluster: "c1", addr: addr}, newTestHandler())
		poll.Until(t, 2*time.Second, "call after restart", func() bool { return callErr(a, addr) == nil })
	})
	t.Run("large bodies", func(t *testing.T) {
		a, b, _, _ := mustPair(t)
		body := make([]byte, 4<<20)
		for i := range body {
			body[i] = byte(i)
		}
		if got := mustCall(t, a, b.Addr(), "echo", body); len(got) != len(body) || got[len(got)-1] != body[len(body)-1] {
			t.Fatalf("got %d bytes back", len(got))
		}
		_, err := a.Call(context.Background(), b.Addr(), "echo", make([]byte, maxCallFrame+1))
		if err == nil || errors.Is(err, ErrUnreachable) {
			t.Fatalf("oversize call: got %v, want a size error", err)
		}
	})
}

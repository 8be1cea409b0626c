package transport

import (
	"context"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
)

func TestTransport_Close(t *testing.T) {
	t.Run("unblocks everything and leaves no goroutines", func(t *testing.T) {
		before := runtime.NumGoroutine()
		ha, hb := newTestHandler(), newTestHandler()
		a, err := newTransport(Config{ListenAddr: "127.0.0.1:0", NodeID: "a", ClusterID: func() string { return "c1" }}, ha, testTiming())
		if err != nil {
			t.Fatal(err)
		}
		b, err := newTransport(Config{ListenAddr: "127.0.0.1:0", NodeID: "b", ClusterID: func() string { return "c1" }}, hb, testTiming())
		if err != nil {
			t.Fatal(err)
		}
		blocked := make(chan struct{}, 2)
		hb.call = func(ctx context.Context, _, _ string, _ []byte) ([]byte, error) {
			blocked <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		hb.snap = func(ctx context.Context, _ string, _ GroupMessage, r io.Reader) error {
			blocked <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}
		a.SendRaft(b.Addr(), testMessages(10))
		b.SendRaft(a.Addr(), testMessages(10))
		poll.Until(t, 2*time.Second, "raft both ways", func() bool { return ha.count() == 10 && hb.count() == 10 })
		results := make(chan error, 2)
		go func() {
			_, err := a.Call(context.Background(), b.Addr(), "block", nil)
			results <- err
		}()
		go func() {
			results <- a.SendSnapshot(context.Background(), b.Addr(), snapMsg(), writeInPieces(randomBytes(100)))
		}()
		<-blocked
		<-blocked

		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := b.Close(); err != nil {
				t.Error(err)
			}
			if err := a.Close(); err != nil {
				t.Error(err)
			}
		}()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			t.Fatal("Close blocked")
		}
		for range 2 {
			mustErrorIs(t, <-results, ErrUnreachable)
		}
		if err := a.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		poll.Until(t, 2*time.Second, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
	})
}

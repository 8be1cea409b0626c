package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
)

func TestLocal_Take(t *testing.T) {
	now := t0
	l := NewLocal(testConfig(), func() time.Time { return now })
	ctx := context.Background()
	for range 3 {
		if err := l.Take(ctx, Posts, "ann"); err != nil {
			t.Fatal(err)
		}
	}
	err := l.Take(ctx, Posts, "ann")
	if !errs.Is(err, errs.RateLimited) {
		t.Fatalf("past the burst: %v", err)
	}
	var ex *Exceeded
	if !errors.As(err, &ex) || ex.Limit != Posts || ex.RetryAfter() != time.Second {
		t.Fatalf("cause %+v, want posts with a retry of 1 s", ex)
	}
	if want := `limit "posts" reached (3/3s per user); retry in 1 s`; err.(*errs.Error).Message != want {
		t.Fatalf("message %q, want %q", err.(*errs.Error).Message, want)
	}
	now = now.Add(time.Second)
	if err := l.Take(ctx, Posts, "ann"); err != nil {
		t.Fatalf("after the refill: %v", err)
	}
}

func TestLocal_Hold(t *testing.T) {
	now := t0
	l := NewLocal(testConfig(), func() time.Time { return now })
	ctx := context.Background()
	r1, err1 := l.Hold(ctx, Streams, "ann")
	_, err2 := l.Hold(ctx, Streams, "ann")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	now = now.Add(time.Hour) // Local's slots never lapse
	if _, err := l.Hold(ctx, Streams, "ann"); !errs.Is(err, errs.RateLimited) {
		t.Fatalf("a third stream: %v", err)
	}
	r1()
	r1() // a second release does nothing
	if _, err := l.Hold(ctx, Streams, "ann"); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if _, err := l.Hold(ctx, Streams, "ann"); !errs.Is(err, errs.RateLimited) {
		t.Fatalf("a double release freed two slots: %v", err)
	}
}

func TestExceeded_RetryAfter(t *testing.T) {
	for _, tc := range []struct{ wait, want time.Duration }{
		{0, time.Second}, {time.Millisecond, time.Second}, {time.Second, time.Second}, {1400 * time.Millisecond, 2 * time.Second},
		{1600 * time.Millisecond, 2 * time.Second}, {2 * time.Minute, 2 * time.Minute},
	} {
		if got := (&Exceeded{Wait: tc.wait}).RetryAfter(); got != tc.want {
			t.Errorf("RetryAfter of %v = %v, want %v", tc.wait, got, tc.want)
		}
	}
}

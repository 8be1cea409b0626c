package stream

import (
	"context"
	"testing"
)

func TestSubscriber_End(t *testing.T) {
	s := newSubscriber("alice", 8, 1<<20)
	s.enqueue([]byte("queued"))
	s.End(ErrSessionEnded)
	s.End(ErrClosed) // the first cause stays
	if s.enqueue([]byte("later")) {
		t.Fatal("a frame was queued after End")
	}
	if _, err := s.Next(context.Background(), nil); err != ErrSessionEnded {
		t.Fatalf("Next = %v, want ErrSessionEnded without the queued frame", err)
	}
	if err := s.Ended(); err != ErrSessionEnded {
		t.Fatalf("Ended = %v", err)
	}
	s.close()
	if _, err := s.Next(context.Background(), nil); err != ErrSessionEnded {
		t.Fatalf("Next after close = %v, want the end's cause still", err)
	}
}

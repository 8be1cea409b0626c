package password

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A Hasher runs at most its concurrency at once; a caller waiting for a slot
// gives up with its context.
func TestHasher_Concurrency(t *testing.T) {
	h := &Hasher{sem: make(chan struct{}, 2)} // no hash runs: only the slots matter
	h.sem <- struct{}{}
	h.sem <- struct{}{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := h.Hash(ctx, "password1"); err == nil {
		t.Fatal("Hash ran past full slots")
	}
	if _, err := h.Verify(ctx, "", "password1"); err == nil {
		t.Fatal("Verify ran past full slots")
	}
	<-h.sem
	<-h.sem

	var running, peak atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := h.acquire(context.Background()); err != nil {
				t.Error(err)
				return
			}
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(2 * time.Millisecond)
			running.Add(-1)
			h.release()
		})
	}
	wg.Wait()
	if peak.Load() > 2 {
		t.Fatalf("%d hashes at once, want at most 2", peak.Load())
	}
}

package node

import (
	"sync"
	"testing"
	"time"
)

func TestRequestCounter_Figures(t *testing.T) {
	var c requestCounter
	t0 := time.Unix(1000, 0)
	if ok, failed, rate := c.figures(t0); ok != 0 || failed != 0 || rate != 0 {
		t.Fatalf("empty counter: %d ok, %d failed, %v/s", ok, failed, rate)
	}
	for i := range 30 {
		c.add(t0.Add(time.Duration(i)*100*time.Millisecond), i%10 == 0)
	}
	ok, failed, rate := c.figures(t0.Add(3 * time.Second))
	if ok != 27 || failed != 3 {
		t.Fatalf("%d ok %d failed, want 27 and 3", ok, failed)
	}
	if rate != 10 {
		t.Fatalf("rate %v over the first 3 s, want 10/s", rate)
	}
	// Within the current second the requests count at once.
	var d requestCounter
	d.add(t0.Add(10*time.Millisecond), false)
	if _, _, rate := d.figures(t0.Add(20 * time.Millisecond)); rate != 1 {
		t.Fatalf("one request just now: rate %v, want 1/s", rate)
	}
	// Past the window the old requests no longer count.
	if _, _, rate := c.figures(t0.Add(60 * time.Second)); rate != 0 {
		t.Fatalf("a minute later: rate %v, want 0", rate)
	}
}

// TestRequestCounter_Concurrent adds from many goroutines at once, within
// one second and across the next: none is lost.
func TestRequestCounter_Concurrent(t *testing.T) {
	var c requestCounter
	t0 := time.Unix(1000, 0)
	const workers, each = 8, 5000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				c.add(t0.Add(time.Duration(i%2)*time.Second), w == 0)
			}
		}()
	}
	wg.Wait()
	ok, failed, rate := c.figures(t0.Add(1500 * time.Millisecond))
	if ok != (workers-1)*each || failed != each {
		t.Fatalf("%d ok, %d failed, want %d and %d", ok, failed, (workers-1)*each, each)
	}
	if want := float64(workers*each) / 1.5; rate != want {
		t.Fatalf("rate %v, want %v", rate, want)
	}
	// A request stamped a window before the slot's second does not count
	// in it.
	c.add(t0.Add(-rateWindow*time.Second), false)
	if _, _, again := c.figures(t0.Add(1500 * time.Millisecond)); again != rate {
		t.Fatalf("a request a window old changed the rate: %v, was %v", again, rate)
	}
}

func TestQuantiles(t *testing.T) {
	v := make([]int64, 0, 100)
	for i := 100; i >= 1; i-- {
		v = append(v, int64(i))
	}
	q := quantiles(v)
	if q.P50 != 50 || q.P99 != 99 || q.Max != 100 {
		t.Fatalf("quantiles of 1..100: %+v", q)
	}
	if q := quantiles([]int64{7}); q.P50 != 7 || q.P99 != 7 || q.Max != 7 {
		t.Fatalf("quantiles of one sample: %+v", q)
	}
}

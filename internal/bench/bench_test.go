package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeWorkload fails every failEvery-th operation and otherwise sleeps.
type fakeWorkload struct {
	sleep     time.Duration
	failEvery int
	calls     atomic.Int64
	mu        sync.Mutex
	seen      map[int]bool
	prepared  bool
}

// Name implements Workload.
func (f *fakeWorkload) Name() string { return "fake" }

// Prepare implements Preparer.
func (f *fakeWorkload) Prepare(ctx context.Context, workers int) error {
	f.prepared = true
	return nil
}

// Op implements Workload.
func (f *fakeWorkload) Op(ctx context.Context, worker, i int) error {
	f.calls.Add(1)
	f.mu.Lock()
	if f.seen == nil {
		f.seen = map[int]bool{}
	}
	f.seen[i] = true
	f.mu.Unlock()
	if f.sleep > 0 {
		select {
		case <-time.After(f.sleep):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.failEvery > 0 && i%f.failEvery == 0 {
		return errors.New("boom")
	}
	return nil
}

func TestRun_Requests(t *testing.T) {
	w := &fakeWorkload{failEvery: 10}
	rep, err := Run(context.Background(), w, Options{Workers: 8, Requests: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !w.prepared {
		t.Error("Prepare was not called")
	}
	if rep.Ops != 900 || rep.Errors != 100 || w.calls.Load() != 1000 || len(w.seen) != 1000 {
		t.Errorf("ops %d errors %d calls %d distinct %d, want 900/100/1000/1000", rep.Ops, rep.Errors, w.calls.Load(), len(w.seen))
	}
	if len(rep.ErrorKinds) != 1 || rep.ErrorKinds[0] != (ErrorKind{Message: "boom", Count: 100}) {
		t.Errorf("error kinds = %v", rep.ErrorKinds)
	}
	var timelineOps, timelineErrs int64
	for _, s := range rep.Timeline {
		timelineOps += s.Ops
		timelineErrs += s.Errors
	}
	if timelineOps != rep.Ops || timelineErrs != rep.Errors {
		t.Errorf("timeline sums to %d ops %d errors, want %d %d", timelineOps, timelineErrs, rep.Ops, rep.Errors)
	}
}

func TestRun_DurationWarmupProgress(t *testing.T) {
	w := &fakeWorkload{sleep: time.Millisecond}
	var seconds []Second
	rep, err := Run(context.Background(), w, Options{
		Workers: 4, Duration: 2400 * time.Millisecond, Warmup: 200 * time.Millisecond,
		Progress: func(s Second) { seconds = append(seconds, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ElapsedS < 2.4 || rep.ElapsedS > 3.4 {
		t.Errorf("elapsed %.3f s, want about 2.4", rep.ElapsedS)
	}
	if len(rep.Timeline) != 3 {
		t.Errorf("timeline has %d seconds, want 3", len(rep.Timeline))
	}
	if len(seconds) != 2 || seconds[0].Second != 0 || seconds[1].Second != 1 || seconds[0].Ops == 0 {
		t.Errorf("progress = %+v, want seconds 0 and 1", seconds)
	}
	if int64(w.calls.Load()) <= rep.Ops {
		t.Errorf("warm-up did not run: %d calls for %d measured ops", w.calls.Load(), rep.Ops)
	}
	if p := rep.Latency.At(50); p < 1 || p > 50 {
		t.Errorf("p50 %.3f ms for 1 ms operations", p)
	}
}

func TestRun_CancelIsNotAnError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	rep, err := Run(ctx, &fakeWorkload{sleep: 50 * time.Millisecond}, Options{Workers: 4, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 0 || rep.Ops == 0 || rep.ElapsedS > 5 {
		t.Errorf("ops %d errors %d elapsed %.1f, want some ops, no errors, a prompt stop", rep.Ops, rep.Errors, rep.ElapsedS)
	}
}

func TestRun_Invalid(t *testing.T) {
	if _, err := Run(context.Background(), &fakeWorkload{}, Options{}); err == nil {
		t.Error("a run with neither duration nor requests started")
	}
}

func TestWriters(t *testing.T) {
	rep, err := Run(context.Background(), &fakeWorkload{failEvery: 7}, Options{Workers: 2, Requests: 200})
	if err != nil {
		t.Fatal(err)
	}
	rep.Params = map[string]string{"value_size": "200", "servers": "http://a<b>"}
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
		check func(t *testing.T, b []byte)
	}{
		{"text", func(b *bytes.Buffer) error { return WriteText(b, rep) }, func(t *testing.T, b []byte) {
			for _, w := range []string{"Workload:", "Value size:", "Complete operations:", "Failed operations:", "  50%", "  66%", " 100%", "longest", "Timeline", "boom"} {
				if !bytes.Contains(b, []byte(w)) {
					t.Errorf("text lacks %q:\n%s", w, b)
				}
			}
		}},
		{"json", func(b *bytes.Buffer) error { return WriteJSON(b, rep) }, func(t *testing.T, b []byte) {
			var back Report
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Ops != rep.Ops || back.Errors != rep.Errors || len(back.Timeline) != len(rep.Timeline) {
				t.Errorf("round trip = %+v", back)
			}
		}},
		{"csv", func(b *bytes.Buffer) error { return WriteCSV(b, rep) }, func(t *testing.T, b []byte) {
			rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			head := strings.Join(rows[0], ",")
			if head != "second,ops,errors,ops_per_s,min_ms,mean_ms,p50_ms,p66_ms,p75_ms,p80_ms,p90_ms,p95_ms,p98_ms,p99_ms,p100_ms" {
				t.Errorf("header = %s", head)
			}
			if len(rows) != len(rep.Timeline)+2 || rows[len(rows)-1][0] != "total" {
				t.Errorf("rows = %v", rows)
			}
		}},
		{"svg", func(b *bytes.Buffer) error { return WriteSVG(b, rep) }, func(t *testing.T, b []byte) {
			dec := xml.NewDecoder(bytes.NewReader(b))
			for {
				if _, err := dec.Token(); err != nil {
					if err.Error() != "EOF" {
						t.Fatalf("SVG is not well-formed XML: %v", err)
					}
					break
				}
			}
			if !bytes.HasPrefix(b, []byte("<svg")) || !bytes.Contains(b, []byte("polyline")) {
				t.Errorf("SVG = %.200s", b)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b); err != nil {
				t.Fatal(err)
			}
			tc.check(t, b.Bytes())
		})
	}
}

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{0, 1}, {-3, 1}, {0.7, 1}, {1.2, 2}, {3, 5}, {7, 10}, {1500, 2000}, {0.013, 0.02},
	} {
		t.Run("", func(t *testing.T) {
			if got := niceStep(tc.in); got < tc.want*0.999 || got > tc.want*1.001 {
				t.Errorf("niceStep(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

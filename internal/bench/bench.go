// Package bench measures workloads against running Parley nodes. Run drives
// a Workload from a number of concurrent workers for a duration or a count
// of operations, after an optional warm-up, and returns a Report: throughput,
// errors, latency percentiles 50/66/75/80/90/95/98/99/100 as Apache Bench
// prints them, and a per-second timeline. Report writers produce text, CSV,
// JSON and an SVG plot.
//
// A workload (KV, Chat, Fanout, Queue, Links, Fsync) only knows how to do
// one operation; everything about measuring lives in this package. The
// same workloads against etcd, NATS and RabbitMQ live in
// internal/bench/peers, apart, so that the server binary never links those
// systems' clients; their options are declared here (peers.go).
package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Workload is one kind of load. Op performs one operation and reports
// whether it failed; it is called concurrently, by worker in [0, workers),
// with i the operation's index in its phase (0, 1, 2, ... across all
// workers), which workloads use to pick keys deterministically.
type Workload interface {
	Name() string
	Op(ctx context.Context, worker int, i int) error
}

// Preparer is a Workload that needs state before it is measured (keys to
// read, say). Prepare runs once before the warm-up, with the number of
// workers as a hint for its own concurrency.
type Preparer interface {
	Prepare(ctx context.Context, workers int) error
}

// Options shape a run.
type Options struct {
	// Workers is the number of concurrent workers (default 1).
	Workers int
	// Duration stops starting operations this long after the measured
	// phase began; 0 means no time limit. Operations in flight complete.
	Duration time.Duration
	// Requests stops after this many operations; 0 means no count limit.
	// At least one of Duration and Requests must be set.
	Requests int
	// Warmup runs the workload this long, unmeasured, before measuring.
	Warmup time.Duration
	// Timeout bounds each operation (0: none); a timed-out one is an error.
	Timeout time.Duration
	// Progress, when set, is called after each full second of the measured
	// phase with that second's figures, from a single goroutine.
	Progress func(Second)
}

// Run prepares the workload, warms up, measures, and returns the report.
// When ctx ends early, Run stops and reports what it measured;
// operations cut short by ctx are not counted as errors.
func Run(ctx context.Context, w Workload, o Options) (*Report, error) {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.Duration <= 0 && o.Requests <= 0 {
		return nil, errors.New("bench: set a duration or a number of requests")
	}
	if p, ok := w.(Preparer); ok {
		if err := p.Prepare(ctx, o.Workers); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", w.Name(), err)
		}
	}
	if o.Warmup > 0 {
		warm := &phase{w: w, o: o, deadline: time.Now().Add(o.Warmup)}
		warm.run(ctx)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &phase{w: w, o: o, rec: newRecorder()}
	if o.Requests > 0 {
		p.requests = int64(o.Requests)
	}
	started := time.Now()
	p.start = started
	if o.Duration > 0 {
		p.deadline = started.Add(o.Duration)
	}
	elapsed := p.run(ctx)
	return p.rec.report(w.Name(), o.Workers, started, elapsed), nil
}

// phase is one stretch of operations: the warm-up (rec nil) or the
// measured run.
type phase struct {
	w        Workload
	o        Options
	rec      *recorder // nil: do not record
	start    time.Time
	deadline time.Time // zero: none
	requests int64     // 0: no limit
	next     atomic.Int64
}

// run starts the workers, waits for them, and returns how long the phase
// lasted: until its last operation ended.
func (p *phase) run(ctx context.Context) time.Duration {
	if p.start.IsZero() {
		p.start = time.Now()
	}
	stopProgress := p.progress()
	var wg sync.WaitGroup
	for id := range p.o.Workers {
		wg.Go(func() { p.worker(ctx, id) })
	}
	wg.Wait()
	elapsed := time.Since(p.start)
	stopProgress()
	return elapsed
}

// worker runs operations until the phase's count or time is used up or ctx
// ends.
func (p *phase) worker(ctx context.Context, id int) {
	for ctx.Err() == nil {
		i := p.next.Add(1) - 1
		if p.requests > 0 && i >= p.requests {
			return
		}
		if !p.deadline.IsZero() && !time.Now().Before(p.deadline) {
			return
		}
		err := p.op(ctx, id, int(i))
		if err != nil && ctx.Err() != nil {
			return // cut short by the caller: not the server's failure
		}
		// p.op recorded the outcome
	}
}

// op performs and records one operation.
func (p *phase) op(ctx context.Context, id, i int) error {
	opCtx := ctx
	if p.o.Timeout > 0 {
		var cancel context.CancelFunc
		opCtx, cancel = context.WithTimeout(ctx, p.o.Timeout)
		defer cancel()
	}
	t0 := time.Now()
	err := p.w.Op(opCtx, id, i)
	t1 := time.Now()
	if p.rec != nil && (err == nil || ctx.Err() == nil) {
		p.rec.record(t1.Sub(p.start), t1.Sub(t0), err)
	}
	return err
}

// progress calls Options.Progress once per completed second until the
// returned function is called.
func (p *phase) progress() (stop func()) {
	if p.rec == nil || p.o.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for sec := 0; ; sec++ {
			select {
			case <-done:
				return
			case <-t.C:
				p.o.Progress(p.rec.second(sec, time.Second))
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

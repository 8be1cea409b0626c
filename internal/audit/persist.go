package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Keep is how many events a node keeps in its store; older ones are
// deleted as new ones are saved.
const Keep = 10_000

// queueSize bounds the events waiting for the writer: Record never waits,
// and counts an event that finds the queue full as dropped.
const queueSize = 1024

// maxBatch bounds the events one Store.Append carries.
const maxBatch = 256

// dropReportEvery bounds how often the writer logs that events were
// dropped.
const dropReportEvery = 10 * time.Second

// Store keeps encoded events on the node's own disk (never replicated):
// storage.NodeLog implements it.
type Store interface {
	// Append durably adds records after the existing ones, dropping the
	// oldest past the store's bound.
	Append(recs [][]byte) error
	// Newest calls fn with each record, newest first, until fn returns
	// false; fn must not keep the slice.
	Newest(fn func(rec []byte) bool) error
}

// Attach makes s the Log's store: Query reads it from now on, and Run
// saves events to it.
func (l *Log) Attach(s Store) {
	l.mu.Lock()
	l.store = s
	l.mu.Unlock()
}

// Run saves recorded events to the attached store until ctx ends, then
// saves what is queued at that moment, detaches the store (Query then
// reads the ring only) and returns. Events recorded before Run starts wait
// in the queue (up to its bound) and are saved first. Without a store Run
// returns at once. Run must not be called twice at once; its caller owns
// the goroutine.
func (l *Log) Run(ctx context.Context) {
	l.mu.Lock()
	s := l.store
	l.mu.Unlock()
	if s == nil {
		return
	}
	defer l.Attach(nil)
	w := &writer{l: l, s: s}
	for {
		select {
		case <-ctx.Done():
			for {
				batch := l.take(nil)
				if len(batch) == 0 {
					return
				}
				w.save(batch)
			}
		case e := <-l.queue:
			w.save(l.take([]Event{e}))
		}
	}
}

// take appends to batch what is queued, without waiting, up to maxBatch.
func (l *Log) take(batch []Event) []Event {
	for len(batch) < maxBatch {
		select {
		case e := <-l.queue:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// Dropped returns how many events were recorded but not saved: the queue
// was full, or the store refused them (a full disk). They stay in the ring
// and the log lines.
func (l *Log) Dropped() uint64 { return l.dropped.Load() }

// writer is the state of Run's goroutine.
type writer struct {
	l          *Log
	s          Store
	failing    bool      // the last append failed (logged once per streak)
	reported   uint64    // Dropped at the last report
	reportedAt time.Time // when it was
}

// save appends batch to the store and reports drops, at most every
// dropReportEvery.
func (w *writer) save(batch []Event) {
	recs := make([][]byte, 0, len(batch))
	for _, e := range batch {
		b, err := json.Marshal(e)
		if err != nil {
			w.l.dropped.Add(1)
			continue
		}
		recs = append(recs, b)
	}
	if err := w.s.Append(recs); err != nil {
		w.l.dropped.Add(uint64(len(recs)))
		if !w.failing {
			w.l.log.Warn("audit events not saved; they stay in memory only", "err", err)
		}
		w.failing = true
	} else {
		w.failing = false
	}
	if d := w.l.dropped.Load(); d > w.reported && time.Since(w.reportedAt) >= dropReportEvery {
		w.l.log.Warn("audit events dropped before saving", "dropped", d-w.reported, "total", d)
		w.reported, w.reportedAt = d, time.Now()
	}
}

// Query returns the events f selects, oldest first: those of the ring and,
// while Run runs, those of the store, each once, at most f.Limit (the
// newest; see Filter.Normalized).
func (l *Log) Query(f Filter) ([]Event, error) {
	f = f.Normalized()
	var out []Event
	for _, e := range l.List() {
		if f.Match(e) {
			out = append(out, e)
		}
	}
	l.mu.Lock()
	s := l.store
	l.mu.Unlock()
	if s != nil {
		n := 0
		err := s.Newest(func(rec []byte) bool {
			var e Event
			if json.Unmarshal(rec, &e) == nil && f.Match(e) {
				out = append(out, e)
				n++
			}
			return n < f.Limit
		})
		if err != nil {
			return nil, fmt.Errorf("read saved audit events: %w", err)
		}
	}
	return Merge(out, f.Limit), nil
}

package jepsen

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/parley-chat/parley/client"
)

// streamReaders is how many live streams follow the room.
const streamReaders = 2

// streamSpan is how long a reader keeps one stream before it resumes on
// the next node of its own accord, so that every row resumes streams
// through every node, the faulty one included.
const streamSpan = 2 * time.Second

// streamIdle is how long a reader waits for a frame before it takes its
// stream for dead (a node cut off answers nothing) and resumes elsewhere.
const streamIdle = 3 * time.Second

// Stream is the room workload with live readers: besides the posters,
// streamReaders streams follow the room, each resuming on the next node from
// its last position whenever its stream breaks or goes quiet, and every
// streamSpan anyway. Its checker
// holds each reader to the stream guarantees: events in seq order, none
// twice, no gap, each the same event as in the stored history (atomic), and,
// once the posts stop, every acknowledged post received (nothing lost
// across resumes).
type Stream struct {
	*Room
	readers []*streamReader
	rwg     sync.WaitGroup
	rstop   chan struct{}
}

// streamReader is one live reader's record.
type streamReader struct {
	mu      sync.Mutex
	events  []client.Event // every event frame, in arrival order
	resumes int            // streams opened after the first
	last    uint64
}

// NewStream creates room name and returns its stream workload.
func NewStream(nodes []*client.Client, name string) (*Stream, error) {
	room, err := NewRoom(nodes, name)
	if err != nil {
		return nil, err
	}
	return &Stream{Room: room, rstop: make(chan struct{})}, nil
}

// Name implements Workload.
func (w *Stream) Name() string { return "stream" }

// Start implements Workload: the readers first, then n posters.
func (w *Stream) Start(n int) {
	for i := range streamReaders {
		r := &streamReader{}
		w.readers = append(w.readers, r)
		w.rwg.Go(func() { w.follow(i, r) })
	}
	w.Room.Start(n)
}

// Stop implements Workload: the posters stop; the readers go on until
// Check has seen them catch up.
func (w *Stream) Stop() { w.Room.Stop() }

// follow keeps reader r's stream open, node after node, until rstop.
func (w *Stream) follow(i int, r *streamReader) {
	node := i
	for opened := 0; ; opened++ {
		select {
		case <-w.rstop:
			return
		default:
		}
		if opened > 0 {
			r.mu.Lock()
			r.resumes++
			r.mu.Unlock()
			node++
		}
		w.read(w.nodes[node%len(w.nodes)], r)
	}
}

// read opens one stream through c, resuming after r's last seq, and
// records its events until it breaks, goes quiet or rstop.
func (w *Stream) read(c *client.Client, r *streamReader) {
	ctx, cancel := context.WithTimeout(context.Background(), streamSpan)
	defer cancel()
	go func() {
		select {
		case <-w.rstop:
			cancel()
		case <-ctx.Done():
		}
	}()
	octx, ocancel := context.WithTimeout(ctx, streamIdle)
	r.mu.Lock()
	after := r.last
	r.mu.Unlock()
	s, err := c.Stream(octx, client.StreamOptions{Resume: map[string]uint64{w.room: after}})
	ocancel()
	if err != nil {
		time.Sleep(100 * time.Millisecond)
		return
	}
	defer s.Close()
	for {
		fctx, fcancel := context.WithTimeout(ctx, streamIdle)
		f, err := s.Next(fctx)
		fcancel()
		if err != nil {
			return
		}
		if f.Type != "event" || f.Room != w.room {
			continue
		}
		r.mu.Lock()
		r.events = append(r.events, f.Event())
		r.last = max(r.last, f.Seq)
		r.mu.Unlock()
	}
}

// Check implements Workload: the room's checks, then each reader's, once
// it has caught up with the stored history.
func (w *Stream) Check(via *client.Client, vizPath string, res *Result) error {
	defer func() {
		close(w.rstop)
		w.rwg.Wait()
	}()
	if err := w.Room.Check(via, vizPath, res); err != nil {
		return err
	}
	res.Workload = w.Name()
	history, err := w.history(w.nodes[0])
	if err != nil {
		return err
	}
	var last uint64
	if len(history) > 0 {
		last = history[len(history)-1].Seq
	}
	bySeq := map[uint64]client.Event{}
	for _, e := range history {
		bySeq[e.Seq] = e
	}
	deadline := time.Now().Add(30 * time.Second)
	for i, r := range w.readers {
		for {
			r.mu.Lock()
			caught := r.last >= last
			r.mu.Unlock()
			if caught {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("reader %d did not reach seq %d in 30 s", i+1, last)
			}
			time.Sleep(50 * time.Millisecond)
		}
		r.mu.Lock()
		v := w.audit(r.events, bySeq, last)
		res.Violations += v.count()
		res.Lost = max(res.Lost, v.lost)
		res.Detail += fmt.Sprintf(" reader %d: %d events, %d resumes%s;", i+1, len(r.events), r.resumes, v)
		r.mu.Unlock()
	}
	return nil
}

// streamViolations counts a reader's breaches of the stream guarantees.
type streamViolations struct{ order, dup, gap, differ, lost int }

func (v streamViolations) count() int { return v.order + v.dup + v.gap + v.differ }

// String lists the non-zero counts, in a fixed order.
func (v streamViolations) String() string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{v.order, "out of order"}, {v.dup, "twice"}, {v.gap, "gaps"}, {v.differ, "unlike the history"}, {v.lost, "acknowledged posts never received"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

// audit checks one reader's events against the stored history (bySeq, up
// to last): each seq one more than the one before, each event equal to the
// stored one, every acknowledged post among them.
func (w *Stream) audit(events []client.Event, bySeq map[uint64]client.Event, last uint64) streamViolations {
	var v streamViolations
	seen := map[uint64]bool{}
	for i, e := range events {
		switch {
		case seen[e.Seq]:
			v.dup++
		case i > 0 && e.Seq < events[i-1].Seq:
			v.order++
		case i > 0 && e.Seq != events[i-1].Seq+1:
			v.gap++
		}
		seen[e.Seq] = true
		if h, ok := bySeq[e.Seq]; !ok || !sameEvent(h, e) {
			v.differ++
		}
	}
	for _, seq := range w.acked {
		if seq <= last && !seen[seq] {
			v.lost++
		}
	}
	return v
}

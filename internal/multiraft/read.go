package multiraft

import (
	"context"
	"time"

	"github.com/parley-chat/parley/internal/errs"
)

// readRequest is one caller waiting for a linearizable read point.
type readRequest struct {
	group uint64
	done  chan error // buffered
}

func (r *readRequest) finish(err error) {
	select {
	case r.done <- err:
	default:
	}
}

// readBatch is the set of reads that share one ReadIndex round.
type readBatch struct {
	ctx    []byte
	sentAt time.Time
	index  uint64
	reqs   []*readRequest
}

func (b *readBatch) finish(err error) {
	for _, r := range b.reqs {
		r.finish(err)
	}
}

// ReadIndex waits until the local replica of a group has applied everything
// committed before the call, confirmed by a quorum (Raft's ReadIndex with
// ReadOnlySafe; no leases). After it returns nil, reading the local state is
// linearizable. Concurrent calls share one round. With no leader or quorum it
// keeps retrying until ctx ends and then fails with a retryable error, never
// returning old data.
func (e *Engine) ReadIndex(ctx context.Context, groupID uint64) error {
	if e.group(groupID) == nil {
		return &NoReplicaError{Group: groupID}
	}
	r := &readRequest{group: groupID, done: make(chan error, 1)}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	e.reads = append(e.reads, r)
	e.mu.Unlock()
	e.notify()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return errs.Wrap(errs.Unavailable, ctx.Err(), "no quorum confirmed the read of group %d in time", groupID)
	case <-e.done:
		return ErrClosed
	}
}

// queueRead adds a read to its group's next batch (loop goroutine).
func (e *Engine) queueRead(r *readRequest) {
	g := e.groups[r.group]
	if g == nil {
		r.finish(&NoReplicaError{Group: r.group})
		return
	}
	g.pendingReads = append(g.pendingReads, r)
	e.markTouched(g)
}

// sendReads starts a ReadIndex round for a group's pending reads when none is
// in flight, and re-sends a round that got no answer within ReadRetry.
func (e *Engine) sendReads(g *group, now time.Time) {
	if g.inflight != nil {
		if now.Sub(g.inflight.sentAt) < e.cfg.ReadRetry {
			return
		}
		// No answer (no leader, lost message): ask again with a fresh
		// context, folding in what queued meanwhile.
		g.inflight.reqs = append(g.inflight.reqs, g.pendingReads...)
		g.pendingReads = nil
		e.issueRead(g, g.inflight, now)
		return
	}
	if len(g.pendingReads) == 0 {
		return
	}
	b := &readBatch{reqs: g.pendingReads}
	g.pendingReads = nil
	g.inflight = b
	e.issueRead(g, b, now)
}

func (e *Engine) issueRead(g *group, b *readBatch, now time.Time) {
	e.readCtxID++
	b.ctx = e.requestContext("ri", e.readCtxID)
	b.sentAt = now
	g.rn.ReadIndex(b.ctx)
	e.markTouched(g)
}

// onReadState records the index a read batch must wait for.
func (e *Engine) onReadState(g *group, ctx []byte, index uint64) {
	if g.inflight == nil || string(g.inflight.ctx) != string(ctx) {
		return // an answer to a context we already re-sent
	}
	b := g.inflight
	g.inflight = nil
	b.index = index
	g.readyReads = append(g.readyReads, b)
	if len(g.pendingReads) > 0 {
		e.markTouched(g)
	}
}

// releaseReads finishes the read batches whose index the group has applied.
func (g *group) releaseReads() {
	n := 0
	for _, b := range g.readyReads {
		if b.index <= g.applied {
			b.finish(nil)
			continue
		}
		g.readyReads[n] = b
		n++
	}
	clear(g.readyReads[n:])
	g.readyReads = g.readyReads[:n]
}

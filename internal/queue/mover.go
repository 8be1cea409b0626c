package queue

import (
	"context"
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// Work is what one Maintain call did.
type Work struct {
	Ticks uint64 // Tick commands proposed (queues with timed work due)
	Moved uint64 // outbox entries moved (dead letters, redriven messages)
}

// Maintain does the background work of the queues of partition p: it
// proposes a Tick for every queue whose timed work (lapsed leases, due
// delays, expiries) is due, and moves every queue's outbox entries to their
// target queues. The node calls it on the partition's leader; running it
// anywhere else, or on two nodes at once, is safe (a move is idempotent),
// only wasteful.
//
// A move is two proposals: an Import of a run of entries with the same
// target into the target's partition, which takes each entry at most once
// (the target keeps the highest sequence number it took from the source),
// then an OutDone in the source's partition, which removes them. A crash
// or failure between the two leaves the entries in the outbox, and the next
// Maintain proposes the same Import again, which takes nothing twice; the
// entries are removed only once the target has them, so nothing is lost.
// A target queue that does not exist drops the entries (counted as
// dropped), as RabbitMQ drops dead letters without a target.
func (s *Service) Maintain(ctx context.Context, p uint64) (Work, error) {
	var moves []outboxWork
	var due []string
	now := s.cfg.Now().UnixMilli()
	if _, err := s.r.Read(ctx, p, true, func(r state.Reader) error {
		var err error
		moves, due, err = pendingWork(r, now)
		return err
	}); err != nil {
		return Work{}, fmt.Errorf("queue: maintain partition %d: %w", p, err)
	}
	var w Work
	for _, q := range due {
		res, err := s.r.Propose(ctx, p, "", EncodeTick(Tick{Queue: q}))
		if err != nil {
			return w, fmt.Errorf("queue: tick %q: %w", q, err)
		}
		if err := decodeOKResult(res, opTick); err != nil && !errs.Is(err, errs.NotFound) {
			return w, fmt.Errorf("queue: tick %q: %w", q, err)
		}
		w.Ticks++
	}
	for _, m := range moves {
		n, err := s.move(ctx, p, m)
		w.Moved += n
		if err != nil {
			return w, err
		}
	}
	return w, nil
}

// move moves a queue's outbox entries read by pendingWork, one run of
// entries with the same target at a time.
func (s *Service) move(ctx context.Context, p uint64, m outboxWork) (uint64, error) {
	var moved uint64
	for rest := m.entries; len(rest) > 0; {
		n := 1
		for n < len(rest) && rest[n].target == rest[0].target {
			n++
		}
		run := rest[:n]
		rest = rest[n:]
		target := run[0].target
		im := Import{Queue: target, Source: m.queue, Incarnation: m.incarnation}
		for _, e := range run {
			im.Entries = append(im.Entries, ImportEntry{Seq: e.seq, Record: e.record})
		}
		res, err := s.r.Propose(ctx, s.r.PartitionOf(target), "", EncodeImport(im))
		if err != nil {
			return moved, fmt.Errorf("queue: move from %q to %q: %w", m.queue, target, err)
		}
		_, _, err = decodeCountResult(res, opImport)
		dropped := errs.Is(err, errs.NotFound)
		if err != nil && !dropped {
			return moved, fmt.Errorf("queue: move from %q to %q: %w", m.queue, target, err)
		}
		res, err = s.r.Propose(ctx, p, "", EncodeOutDone(OutDone{Queue: m.queue, Through: run[n-1].seq, Dropped: dropped, Incarnation: m.incarnation}))
		if err == nil {
			_, _, err = decodeCountResult(res, opOutDone)
		}
		if errs.Is(err, errs.NotFound) { // the source queue was deleted meanwhile
			return moved, nil
		}
		if err != nil {
			return moved, fmt.Errorf("queue: moved from %q to %q: %w", m.queue, target, err)
		}
		moved += uint64(n)
	}
	return moved, nil
}

// PartitionQueues returns the queues of partition p with their stats, read
// from the local replica when there is one (stale): the node's metrics
// read the partitions it leads.
func (s *Service) PartitionQueues(ctx context.Context, p uint64) ([]QueueInfo, error) {
	var infos []QueueInfo
	if _, err := s.r.Read(ctx, p, true, func(r state.Reader) error {
		var err error
		infos, err = List(r)
		return err
	}); err != nil {
		return nil, fmt.Errorf("queue: list partition %d: %w", p, err)
	}
	return infos, nil
}

package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/state"
)

// receive proposes rc, and with o.Wait > 0 proposes it again whenever the
// queue may have a message for user, until messages are taken or the wait
// ends. Only the first attempt acknowledges rc.Acks. Attempt n uses
// DedupKey(..., n), so that a retried long poll replays the recorded
// attempts and takes no second message.
func (s *Service) receive(ctx context.Context, user, queue string, o ReceiveOptions, rc Receive, idempotencyKey string) ([]Message, error) {
	p := s.r.PartitionOf(queue)
	deadline := time.Now().Add(o.Wait)
	cmd := EncodeReceive(rc)
	for attempt := uint64(0); ; attempt++ {
		if attempt == 1 && len(rc.Acks) > 0 {
			rc.Acks = nil
			cmd = EncodeReceive(rc)
		}
		res, err := s.r.Propose(ctx, p, DedupKey(user, queue, idempotencyKey, attempt), cmd)
		if err != nil {
			return nil, fmt.Errorf("queue: receive %q: %w", queue, err)
		}
		rr, err := decodeReceiveResult(res)
		if err != nil || len(rr.msgs) > 0 || o.Wait <= 0 {
			return rr.msgs, err
		}
		ready, err := s.awaitMessage(ctx, o.StopWaiting, p, user, queue, o.From, rr.index, rr.nextLapseMs, deadline)
		if err != nil || !ready {
			return nil, err
		}
	}
}

// awaitMessage waits until queue may hold a message for user (from one
// sender when from is not ""), and returns true, or until deadline, and
// returns false. after is the Raft index of the receive that found nothing,
// lapseMs the earliest lease expiry it reported (0 for none).
//
// It waits on the Notifier, or polls with a growing interval without one,
// but never past the next lease expiry; then it probes the queue with a
// stale read and returns true only when the probe finds a message, or when
// the Notifier reported a change the probe cannot see yet (the proposal that
// follows settles it, and yields a current index to wait after).
func (s *Service) awaitMessage(ctx context.Context, stop <-chan struct{}, p uint64, user, queue, from string, after uint64, lapseMs int64, deadline time.Time) (bool, error) {
	poll := s.cfg.PollMin
	for {
		d := time.Until(deadline)
		if d <= 0 || closed(stop) {
			return false, nil
		}
		if lapseMs > 0 {
			untilLapse := time.Duration(lapseMs+1-s.cfg.Now().UnixMilli()) * time.Millisecond
			d = min(d, max(untilLapse, s.cfg.PollMin))
		}
		notified := false
		if n := s.cfg.Notifier; n != nil {
			wctx, cancel := context.WithTimeout(ctx, d)
			if stop != nil {
				go func() {
					select {
					case <-stop:
						cancel()
					case <-wctx.Done():
					}
				}()
			}
			err := n.Wait(wctx, queue, after)
			timedOut := wctx.Err() != nil
			cancel()
			switch {
			case ctx.Err() != nil:
				return false, ctx.Err()
			case err != nil && !timedOut:
				return false, fmt.Errorf("queue: wait on %q: %w", queue, err)
			}
			notified = err == nil
		} else {
			if err := sleep(ctx, stop, min(d, poll)); err != nil {
				return false, err
			}
			poll = min(2*poll, s.cfg.PollMax)
		}
		if closed(stop) {
			return false, nil
		}
		var pr probeResult
		now := s.cfg.Now().UnixMilli()
		if _, err := s.r.Read(ctx, p, true, func(r state.Reader) error {
			var err error
			pr, err = probe(r, queue, user, from, now)
			return err
		}); err != nil {
			return false, fmt.Errorf("queue: receive %q: %w", queue, err)
		}
		switch {
		case pr.ready:
			return true, nil
		case pr.version > after:
			after = pr.version // the queue changed, but not for us
		case notified:
			return true, nil
		}
		lapseMs = pr.nextLapseMs
	}
}

// sleep waits for d, until stop closes (nil: never) or until ctx is done.
func sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-stop:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closed reports whether stop (nil: never) is closed.
func closed(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

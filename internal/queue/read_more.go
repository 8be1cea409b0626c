package queue

import (
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// info returns the public description of the queue, with its stats.
func (q *queueRecord) info(r state.Reader, name string) (QueueInfo, error) {
	oldest, err := oldestTime(r, keysOf(name), q)
	if err != nil {
		return QueueInfo{}, err
	}
	return QueueInfo{
		Name:      name,
		Creator:   q.creator,
		CreatedMs: q.createdMs,
		Messages:  q.messages,
		InFlight:  q.leased,
		LastID:    q.nextID - 1,
		Settings:  q.settings(),
		Stats: Stats{
			Ready: q.ready(), Leased: q.leased, Delayed: q.delayed, Waiting: q.waiting, DeadLetters: q.deadHeld,
			DeadLettered: q.deadOut, Dropped: q.dropped, Expired: q.expired, Moving: q.outNext - q.outFloor,
			OldestMs: oldest,
		},
	}, nil
}

// oldestTime returns the send time of the queue's first stored message (by
// id), 0 when it holds none.
func oldestTime(r state.Reader, k keys, q *queueRecord) (int64, error) {
	if q.messages == 0 {
		return 0, nil
	}
	var t int64
	var err error
	p := k.msgPrefix()
	scanErr := r.Scan(k.msg(q.msgFloor), state.PrefixEnd(p), func(key, v []byte) bool {
		var m messageRecord
		m, err = decodeMessageRecord(key, v)
		t = m.timeMs
		return false
	})
	if scanErr != nil {
		return 0, fmt.Errorf("queue: scan messages: %w", scanErr)
	}
	return t, err
}

// Info returns one queue's description and stats. A missing queue is
// errs.NotFound.
func Info(r state.Reader, queue string) (QueueInfo, error) {
	q, ok, err := loadQueue(r, queue)
	if err != nil {
		return QueueInfo{}, err
	}
	if !ok {
		return QueueInfo{}, errs.New(errs.NotFound, "queue %q does not exist", queue)
	}
	return q.info(r, queue)
}

// Browse returns up to limit stored messages of queue with ids above after,
// in id order, without taking them: every message when all is set, else
// those user may receive (sent to anyone or to user). Receipts are never
// shown. A missing queue is errs.NotFound.
func Browse(r state.Reader, queue, user string, all bool, after uint64, limit int) ([]Message, error) {
	q, ok, err := loadQueue(r, queue)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errs.New(errs.NotFound, "queue %q does not exist", queue)
	}
	k := keysOf(queue)
	var msgs []Message
	var decodeErr error
	p := k.msgPrefix()
	scanErr := r.Scan(k.msg(max(after+1, q.msgFloor)), state.PrefixEnd(p), func(key, v []byte) bool {
		var id uint64
		var m messageRecord
		if id, decodeErr = idAt(key); decodeErr != nil {
			return false
		}
		if m, decodeErr = decodeMessageRecord(key, v); decodeErr != nil {
			return false
		}
		if all || m.receiver == "" || ident.EqualFold(m.receiver, user) {
			msg := messageOf(id, &m)
			msg.Receipt = ""
			msg.Body = append([]byte(nil), m.body...)
			msgs = append(msgs, msg)
		}
		return len(msgs) < limit
	})
	if scanErr != nil {
		return nil, fmt.Errorf("queue: scan messages: %w", scanErr)
	}
	return msgs, decodeErr
}

// outboxWork is a queue's pending moves as the mover reads them.
type outboxWork struct {
	queue       string
	incarnation uint64
	entries     []outboxEntry // in sequence order, at most MaxBatch
}

// outboxEntry is one outbox entry: the target queue and the message record.
type outboxEntry struct {
	seq    uint64
	target string
	record []byte
}

// pendingWork returns, for every queue of a partition's state, its first
// outbox entries (up to MaxBatch), and the queues whose timed work is due
// at nowMs (a timer or an expiry).
func pendingWork(r state.Reader, nowMs int64) (moves []outboxWork, due []string, err error) {
	var recs []queueEntry
	err = scanQueues(r, func(name string, q *queueRecord) error {
		if q.outNext > q.outFloor {
			recs = append(recs, queueEntry{name, *q})
		}
		if q.mayHaveLapsed(nowMs) || q.mayExpire(nowMs) {
			due = append(due, name)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, e := range recs {
		w := outboxWork{queue: e.name, incarnation: e.rec.incarnation}
		k := keysOf(e.name)
		var entryErr error
		p := k.outboxPrefix()
		if err := r.Scan(k.outbox(e.rec.outFloor), state.PrefixEnd(p), func(key, v []byte) bool {
			var oe outboxEntry
			if oe.seq, entryErr = idAt(key); entryErr != nil {
				return false
			}
			target, rest, err := wire.String(v, errMalformed)
			if entryErr = err; err != nil {
				return false
			}
			oe.target, oe.record = target, append([]byte(nil), rest...)
			w.entries = append(w.entries, oe)
			return len(w.entries) < MaxBatch
		}); err != nil || entryErr != nil {
			return nil, nil, fmt.Errorf("queue: scan outbox of %q: %w%w", e.name, err, entryErr)
		}
		moves = append(moves, w)
	}
	return moves, due, nil
}

package partition

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
)

// TailRequest is the body of the stream.tail call an upstream feed makes to
// a replica node: the room's applied events after a seq, held up to WaitMs
// until there are some.
type TailRequest struct {
	Room  string `json:"room"`
	After uint64 `json:"after"`
	// Known is false for the feed's first call: the answer is only the
	// room's last seq, the feed's starting position.
	Known  bool  `json:"known,omitempty"`
	WaitMs int64 `json:"wait_ms,omitempty"`
}

// upstream makes one tail call for the room to a replica node of partition
// p (the attempt-th in turn, so failures move on to the next) and hands
// its answer to the Hub.
func (rf *roomFeed) upstream(ctx context.Context, p uint64, attempt int) error {
	d := &rf.f.r.d
	addrs := d.Directory.ReplicaAddrs(p)
	if len(addrs) == 0 {
		return errs.New(errs.Unavailable, "no replica of partition %d known", p)
	}
	addr := addrs[attempt%len(addrs)]
	if addr == d.Self {
		return errs.New(errs.Unavailable, "the map lists a replica here that is not open yet")
	}
	wait := tailWait
	if !rf.known {
		wait = 0
	}
	body, _ := json.Marshal(TailRequest{Room: rf.room, After: rf.pos, Known: rf.known, WaitMs: wait.Milliseconds()})
	cctx, cancel := context.WithTimeout(ctx, wait+DefaultRequestTimeout)
	defer cancel()
	var rep Reply
	if err := Call(cctx, d.Caller, addr, MethodTail, body, &rep); err != nil {
		return err
	}
	if err := rep.Err(p); err != nil {
		return err
	}
	var res TailResult
	if err := json.Unmarshal(rep.Result, &res); err != nil {
		return fmt.Errorf("bad tail answer from %s: %w", addr, err)
	}
	rf.take(res)
	return nil
}

// Tail answers a stream.tail call from this node's replica: at once when it
// has events after the caller's position (or the caller has no position
// yet), else at the room's next change or when the wait ends.
func (f *Feeds) Tail(ctx context.Context, req TailRequest) Reply {
	p := f.r.PartitionOf(req.Room)
	wait := time.Duration(min(max(req.WaitMs, 0), int64(time.Minute/time.Millisecond))) * time.Millisecond
	t := time.NewTimer(wait)
	defer t.Stop()
	recheck := time.NewTicker(streamRecheck) // a snapshot brings events without a signal
	defer recheck.Stop()
	key := Key{Domain: chat.Tag, Name: req.Room}
	for {
		changed, done := f.notes.Changed(p, key)
		res, err := f.tailLocal(ctx, p, req.Room, req.After, req.Known)
		if err != nil {
			done()
			return ReplyOf(nil, err)
		}
		if len(res.Events) > 0 || res.Compacted || res.Deleted || !req.Known {
			done()
			return resultReply(res)
		}
		select {
		case <-changed:
			done()
			continue
		case <-recheck.C:
			done()
			continue
		case <-t.C:
		case <-ctx.Done():
		}
		done()
		return resultReply(res)
	}
}

// resultReply is a Reply carrying v as JSON.
func resultReply(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		return ReplyOf(nil, err)
	}
	return Reply{Result: b}
}

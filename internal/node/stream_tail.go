package node

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/multiraft"
)

// methodTail is the internal call an upstream feed makes to a replica node:
// the room's applied events after a seq, held up to WaitMs until there are
// some.
const methodTail = "stream.tail"

// tailRequest is the body of the "stream.tail" call.
type tailRequest struct {
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
func (f *roomFeed) upstream(ctx context.Context, p uint64, attempt int) error {
	addrs := f.s.n.replicaAddrs(p)
	if len(addrs) == 0 {
		return errs.New(errs.Unavailable, "no replica of partition %d known", p)
	}
	addr := addrs[attempt%len(addrs)]
	if addr == f.s.n.self() {
		return errs.New(errs.Unavailable, "the map lists a replica here that is not open yet")
	}
	wait := tailWait
	if !f.known {
		wait = 0
	}
	body, _ := json.Marshal(tailRequest{Room: f.room, After: f.pos, Known: f.known, WaitMs: wait.Milliseconds()})
	cctx, cancel := context.WithTimeout(ctx, wait+defaultRequestTimeout)
	defer cancel()
	var rep callReply
	if err := f.s.n.call(cctx, addr, methodTail, body, &rep); err != nil {
		return err
	}
	if err := rep.err(p); err != nil {
		return err
	}
	var res tailResult
	if err := json.Unmarshal(rep.Result, &res); err != nil {
		return fmt.Errorf("bad tail answer from %s: %w", addr, err)
	}
	f.take(res)
	return nil
}

// handleTail answers a "stream.tail" call from this node's replica: at once
// when it has events after the caller's position (or the caller has no
// position yet), else at the room's next change or when the wait ends.
func (n *Node) handleTail(ctx context.Context, body []byte) ([]byte, error) {
	var req tailRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("bad tail request: %w", err)
	}
	p := n.router.PartitionOf(req.Room)
	wait := time.Duration(min(max(req.WaitMs, 0), int64(time.Minute/time.Millisecond))) * time.Millisecond
	t := time.NewTimer(wait)
	defer t.Stop()
	recheck := time.NewTicker(streamRecheck) // a snapshot brings events without a signal
	defer recheck.Stop()
	for {
		if !n.engine.HasGroup(p) {
			return json.Marshal(replyOf(nil, &multiraft.NoReplicaError{Group: p}))
		}
		changed := n.streams.signals.changed(req.Room)
		res, err := tailState(n.db.State(p), req.Room, req.After, req.Known)
		if err != nil {
			return json.Marshal(replyOf(nil, err))
		}
		if len(res.Events) > 0 || res.Compacted || res.Deleted || !req.Known {
			b, _ := json.Marshal(res)
			return json.Marshal(callReply{Result: b})
		}
		select {
		case <-changed:
			continue
		case <-recheck.C:
			continue
		case <-t.C:
		case <-ctx.Done():
		}
		b, _ := json.Marshal(res)
		return json.Marshal(callReply{Result: b})
	}
}

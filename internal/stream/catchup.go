package stream

import (
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
)

// startCatchUp starts reading the events sb misses from the Source. r.mu
// must be held; sb is not live.
func (h *Hub) startCatchUp(r *room, sb *sub) {
	h.bgMu.Lock()
	defer h.bgMu.Unlock()
	if h.bgDone {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.catchUp(r, sb)
	}()
}

// catchUp delivers sb's missing events, read from the Source page by page,
// until sb has everything up to the room's position; then sb goes live
// (published events reach it directly) and gets its ready frame if it has
// not had one. Errors that will not go away end the subscription with an
// error frame; others are retried.
func (h *Hub) catchUp(r *room, sb *sub) {
	s := sb.s
	for attempt := 0; ; attempt++ {
		r.mu.Lock()
		if sb.removed || sb.live {
			r.mu.Unlock()
			return
		}
		after := sb.next - 1
		r.mu.Unlock()
		events, err := h.cfg.Source.EventsAfter(h.ctx, r.name, after, h.cfg.CatchUpPage)
		if h.ctx.Err() != nil {
			return
		}
		if err != nil {
			switch errs.CodeOf(err) {
			case chat.CodeHistoryCompacted, errs.NotFound, errs.Forbidden:
				h.fail(s, r.name, sb, ErrorFrameFor(r.name, err))
				return
			}
		}
		if h.catchUpStep(r, sb, events) {
			return
		}
		if err != nil || len(events) == 0 {
			if !h.pause(attempt) {
				return
			}
		} else {
			attempt = -1
		}
	}
}

// catchUpStep delivers events to sb and reports whether sb is live again.
func (h *Hub) catchUpStep(r *room, sb *sub, events []chat.Event) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sb.removed {
		return true
	}
	s := sb.s
	for i := range events {
		if events[i].Seq == sb.next {
			h.deliver(s, EncodeEvent(events[i].ViewFor(s.user)))
			sb.next++
			if h.revokeAfter(r, sb, &events[i]) {
				return true
			}
		}
	}
	if sb.next <= r.pos {
		return false
	}
	sb.live = true
	if !sb.ready {
		sb.ready = true
		enqueueReady(s, r.name, sb.next-1)
	}
	return true
}

// pause waits before retry attempt+1 (longer after repeated failures, at
// most 20 Retry); false when the Hub closed.
func (h *Hub) pause(attempt int) bool {
	t := time.NewTimer(h.cfg.Retry * time.Duration(min(attempt+1, 20)))
	defer t.Stop()
	select {
	case <-h.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/stream"
)

// Stream tuning.
const (
	// streamRecheck is how often a room feed re-reads its local replica
	// without a signal (a snapshot brings events without commands) and
	// checks whether the node gained or lost the room's replica.
	streamRecheck = time.Second
	// feedPage is how many events a feed reads or asks a replica for at once.
	feedPage = 128
	// tailWait is how long a replica holds an upstream feed's tail call
	// when there is nothing new.
	tailWait = 5 * time.Second
)

// streams is the node's side of live streams: the Hub, fed by one feed per
// room with subscribers here. A feed tails the local replica's applied
// state when the node holds one of the room's partition and otherwise keeps
// a long-polling "tail" call to a replica node (an upstream feed), shared by
// every local subscriber of the room. Only applied events travel, in seq
// order; the Hub fills any gap from EventsAfter.
type streams struct {
	n       *Node
	hub     *stream.Hub
	signals *roomSignals

	mu     sync.Mutex
	feeds  map[string]context.CancelFunc
	closed bool
	wg     sync.WaitGroup
}

var _ stream.Source = (*streams)(nil)

func newStreams(n *Node) *streams {
	s := &streams{n: n, signals: newRoomSignals(), feeds: map[string]context.CancelFunc{}}
	s.hub = stream.NewHub(stream.Config{Source: s})
	return s
}

// Watch implements stream.Source: it starts room's feed.
func (s *streams) Watch(room string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.feeds[room] != nil || s.n.ctx == nil {
		return
	}
	ctx, cancel := context.WithCancel(s.n.ctx)
	s.feeds[room] = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.feed(ctx, room)
	}()
}

// Unwatch implements stream.Source: it stops room's feed.
func (s *streams) Unwatch(room string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cancel := s.feeds[room]; cancel != nil {
		cancel()
		delete(s.feeds, room)
	}
}

// close disconnects every subscriber and stops every feed and catch-up.
func (s *streams) close() {
	s.hub.Close()
	s.mu.Lock()
	s.closed = true
	for room, cancel := range s.feeds {
		cancel()
		delete(s.feeds, room)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// EventsAfter implements stream.Source: events from the local replica when
// the node holds one, else a stale read of a replica (seqs are immutable
// once applied, so any replica's events are right; one that lags returns
// fewer and the Hub asks again).
func (s *streams) EventsAfter(ctx context.Context, room string, after uint64, limit int) ([]chat.Event, error) {
	p := s.n.router.PartitionOf(room)
	if s.n.engine.HasGroup(p) {
		return chat.EventsAfter(s.n.db.State(p), room, after, limit)
	}
	var events []chat.Event
	_, err := s.n.router.Read(ctx, p, true, func(r state.Reader) error {
		var err error
		events, err = chat.EventsAfter(r, room, after, limit)
		return err
	})
	return events, err
}

// feed publishes room's applied events into the Hub until ctx ends.
func (s *streams) feed(ctx context.Context, room string) {
	f := roomFeed{s: s, room: room}
	for attempt := 0; ctx.Err() == nil; {
		p := s.n.router.PartitionOf(room)
		var err error
		if s.n.engine.HasGroup(p) {
			err = f.local(ctx, p)
		} else {
			err = f.upstream(ctx, p, attempt)
		}
		if err == nil {
			attempt = 0
			continue
		}
		attempt++
		if !sleepBackoff(ctx, attempt) {
			return
		}
	}
}

// roomFeed is one room's feed position.
type roomFeed struct {
	s       *streams
	room    string
	pos     uint64 // every event up to pos was handed to the Hub
	known   bool
	private bool
}

// take hands a tail result to the Hub: whether the room is private, the
// room's last seq at the source when the feed has no position yet or its
// next events were compacted away, and events after pos.
func (f *roomFeed) take(res tailResult) {
	hub := f.s.hub
	if res.Deleted {
		hub.Gone(f.room, string(errs.NotFound), fmt.Sprintf("room %q was deleted", f.room))
		return
	}
	if res.Private != f.private || !f.known {
		f.private = res.Private
		hub.SetPrivate(f.room, res.Private)
	}
	events, lastSeq, compacted := res.Events, res.LastSeq, res.Compacted
	if !f.known || compacted {
		if lastSeq > f.pos || !f.known {
			f.pos, f.known = lastSeq, true
			hub.Advance(f.room, f.pos)
		}
		return
	}
	if len(events) > 0 {
		hub.Publish(f.room, events)
		f.pos = events[len(events)-1].Seq
	}
}

// local tails the local replica of partition p: one read, then, when it
// found nothing new, a wait for the room's next change, streamRecheck or
// ctx.
func (f *roomFeed) local(ctx context.Context, p uint64) error {
	changed := f.s.signals.changed(f.room)
	res, err := tailState(f.s.n.db.State(p), f.room, f.pos, f.known)
	if err != nil {
		return err
	}
	f.take(res)
	if len(res.Events) > 0 || (res.Compacted && res.LastSeq > f.pos) {
		return nil
	}
	t := time.NewTimer(streamRecheck)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// tailResult is what one read of a room's tail finds: events after the
// reader's position, and the room's last seq.
type tailResult struct {
	Events  []chat.Event `json:"events,omitempty"`
	LastSeq uint64       `json:"last_seq"`
	// Compacted: events after the position are gone (retention); the
	// reader jumps to LastSeq and the Hub tells affected subscribers.
	Compacted bool `json:"compacted,omitempty"`
	// Private: the room is private (members who leave stop receiving it).
	Private bool `json:"private,omitempty"`
	// Deleted: the room was deleted; its subscribers get not_found.
	Deleted bool `json:"deleted,omitempty"`
}

// tailState reads room's tail from a replica's state. A room that does not
// exist (yet, on a replica that lags, or any more) has nothing new.
func tailState(r state.Reader, room string, after uint64, known bool) (tailResult, error) {
	rm, found, err := chat.GetRoom(r, room)
	if err != nil || !found {
		if err == nil && known {
			var deleted bool
			deleted, err = chat.IsDeleted(r, room)
			return tailResult{LastSeq: after, Deleted: deleted}, err
		}
		return tailResult{LastSeq: after}, err
	}
	if !known {
		return tailResult{LastSeq: rm.LastSeq, Private: rm.Private}, nil
	}
	events, err := chat.EventsAfter(r, room, after, feedPage)
	switch {
	case errs.Is(err, chat.CodeHistoryCompacted):
		return tailResult{LastSeq: rm.LastSeq, Compacted: true, Private: rm.Private}, nil
	case errs.Is(err, errs.NotFound):
		return tailResult{LastSeq: after}, nil
	case err != nil:
		return tailResult{}, err
	}
	return tailResult{Events: events, LastSeq: rm.LastSeq, Private: rm.Private}, nil
}

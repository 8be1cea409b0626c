package partition

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

// Feed tuning.
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

// Feeds is the node's side of live streams: the Hub, fed by one feed per
// room with subscribers here. A feed tails the local replica's applied
// state when the node holds one of the room's partition, woken by the
// Notifier, and otherwise keeps a long-polling tail call to a replica node
// (an upstream feed), shared by every local subscriber of the room. Only
// applied events travel, in seq order; the Hub fills any gap from
// EventsAfter. Every read is one snapshot of a replica (Router.ReadLocal,
// Router.Read), so a replica replaced under a feed is never read emptied.
type Feeds struct {
	ctx   context.Context
	r     *Router
	notes *Notifier
	hub   *stream.Hub

	mu     sync.Mutex
	feeds  map[string]context.CancelFunc
	closed bool
	wg     sync.WaitGroup
}

var _ stream.Source = (*Feeds)(nil)

// NewFeeds returns the feeds of the node r routes for; they run until ctx
// ends or Close.
func NewFeeds(ctx context.Context, r *Router, notes *Notifier) *Feeds {
	f := &Feeds{ctx: ctx, r: r, notes: notes, feeds: map[string]context.CancelFunc{}}
	f.hub = stream.NewHub(stream.Config{Source: f})
	return f
}

// Hub returns the Hub the feeds publish into.
func (f *Feeds) Hub() *stream.Hub { return f.hub }

// Watch implements stream.Source: it starts room's feed.
func (f *Feeds) Watch(room string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.feeds[room] != nil {
		return
	}
	ctx, cancel := context.WithCancel(f.ctx)
	f.feeds[room] = cancel
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.feed(ctx, room)
	}()
}

// Unwatch implements stream.Source: it stops room's feed.
func (f *Feeds) Unwatch(room string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cancel := f.feeds[room]; cancel != nil {
		cancel()
		delete(f.feeds, room)
	}
}

// WatchedRooms returns the rooms with a feed on this node.
func (f *Feeds) WatchedRooms() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	rooms := make([]string, 0, len(f.feeds))
	for room := range f.feeds {
		rooms = append(rooms, room)
	}
	return rooms
}

// SendRoom sends a frame outside the seq order (presence) to room's
// subscribers on this node.
func (f *Feeds) SendRoom(room string, frame []byte) { f.hub.SendRoom(room, frame) }

// Close disconnects every subscriber and stops every feed and catch-up.
func (f *Feeds) Close() {
	f.hub.Close()
	f.mu.Lock()
	f.closed = true
	for room, cancel := range f.feeds {
		cancel()
		delete(f.feeds, room)
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// EventsAfter implements stream.Source: a stale read of the local replica
// when the node holds one, else of a replica node (seqs are immutable once
// applied, so any replica's events are right; one that lags returns fewer
// and the Hub asks again).
func (f *Feeds) EventsAfter(ctx context.Context, room string, after uint64, limit int) ([]chat.Event, error) {
	var events []chat.Event
	_, err := f.r.Read(ctx, f.r.PartitionOf(room), true, func(r state.Reader) error {
		var err error
		events, err = chat.EventsAfter(r, room, after, limit)
		return err
	})
	return events, err
}

// feed publishes room's applied events into the Hub until ctx ends.
func (f *Feeds) feed(ctx context.Context, room string) {
	rf := roomFeed{f: f, room: room}
	for attempt := 0; ctx.Err() == nil; {
		p := f.r.PartitionOf(room)
		var err error
		if f.r.d.Engine.HasGroup(p) {
			err = rf.local(ctx, p)
		} else {
			err = rf.upstream(ctx, p, attempt)
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
	f       *Feeds
	room    string
	pos     uint64 // every event up to pos was handed to the Hub
	known   bool
	private bool
	// reported: the Hub was told whether the room is private (once it
	// exists).
	reported bool
}

// take hands a tail result to the Hub: whether the room is private, the
// room's last seq at the source when the feed has no position yet or its
// next events were compacted away, and events after pos.
func (rf *roomFeed) take(res TailResult) {
	hub := rf.f.hub
	if res.Deleted {
		hub.Gone(rf.room, string(errs.NotFound), fmt.Sprintf("room %q was deleted", rf.room))
		return
	}
	if !res.Missing && (res.Private != rf.private || !rf.reported) {
		rf.private, rf.reported = res.Private, true
		hub.SetPrivate(rf.room, res.Private)
	}
	events, lastSeq, compacted := res.Events, res.LastSeq, res.Compacted
	if !rf.known || compacted {
		if lastSeq > rf.pos || !rf.known {
			rf.pos, rf.known = lastSeq, true
			hub.Advance(rf.room, rf.pos)
		}
		return
	}
	if len(events) > 0 {
		hub.Publish(rf.room, events)
		rf.pos = events[len(events)-1].Seq
	}
}

// local tails the local replica of partition p: one read, then, when it
// found nothing new, a wait for the room's next change, streamRecheck or
// ctx. It fails when the replica is gone (the feed turns upstream).
func (rf *roomFeed) local(ctx context.Context, p uint64) error {
	changed, done := rf.f.notes.Changed(p, Key{Domain: chat.Tag, Name: rf.room})
	defer done()
	res, err := rf.f.tailLocal(ctx, p, rf.room, rf.pos, rf.known)
	if err != nil {
		return err
	}
	rf.take(res)
	if len(res.Events) > 0 || (res.Compacted && res.LastSeq > rf.pos) {
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

// tailLocal reads room's tail from one snapshot of this node's replica of p
// (a multiraft.NoReplicaError when it holds none).
func (f *Feeds) tailLocal(ctx context.Context, p uint64, room string, after uint64, known bool) (TailResult, error) {
	var res TailResult
	_, fnErr, err := f.r.ReadLocal(ctx, p, false, func(r state.Reader) error {
		var err error
		res, err = tailState(r, room, after, known)
		return err
	})
	if err == nil {
		err = fnErr
	}
	return res, err
}

// TailResult is what one read of a room's tail finds: events after the
// reader's position, and the room's last seq.
type TailResult struct {
	Events  []chat.Event `json:"events,omitempty"`
	LastSeq uint64       `json:"last_seq"`
	// Compacted: events after the position are gone (retention); the
	// reader jumps to LastSeq and the Hub tells affected subscribers.
	Compacted bool `json:"compacted,omitempty"`
	// Private: the room is private (members who leave stop receiving it).
	Private bool `json:"private,omitempty"`
	// Deleted: the room was deleted; its subscribers get not_found.
	Deleted bool `json:"deleted,omitempty"`
	// Missing: no such room (yet: a mention inbox before its first
	// mention); Private says nothing then.
	Missing bool `json:"missing,omitempty"`
}

// tailState reads room's tail from a replica's state. A room that does not
// exist (yet, on a replica that lags, or any more) has nothing new.
func tailState(r state.Reader, room string, after uint64, known bool) (TailResult, error) {
	rm, found, err := chat.GetRoom(r, room)
	if err != nil || !found {
		if err == nil && known {
			var deleted bool
			deleted, err = chat.IsDeleted(r, room)
			return TailResult{LastSeq: after, Deleted: deleted, Missing: !deleted}, err
		}
		return TailResult{LastSeq: after, Missing: true}, err
	}
	if !known {
		return TailResult{LastSeq: rm.LastSeq, Private: rm.Private}, nil
	}
	events, err := chat.EventsAfter(r, room, after, feedPage)
	switch {
	case errs.Is(err, chat.CodeHistoryCompacted):
		return TailResult{LastSeq: rm.LastSeq, Compacted: true, Private: rm.Private}, nil
	case errs.Is(err, errs.NotFound):
		return TailResult{LastSeq: after}, nil
	case err != nil:
		return TailResult{}, err
	}
	return TailResult{Events: events, LastSeq: rm.LastSeq, Private: rm.Private}, nil
}

package search

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// Indexer tuning.
const (
	// sweepEvery is how often an indexer compares every room of its
	// replica with what it indexed, when the replica applied anything
	// since the last sweep: a snapshot brings events without commands,
	// and retention (Compact) and room deletions are found so.
	sweepEvery = time.Second
	// eventPage is how many events one read takes.
	eventPage = 512
	// pagesPerRead bounds the pages read from one snapshot, so a rebuild
	// does not hold one snapshot for long.
	pagesPerRead = 8
	// coalesce is how long an indexer lets touches gather after the first
	// before it reads: one read and one Bleve batch for all the rooms and
	// posts of that time, instead of one per post (the cost of indexing
	// beside posting is per batch; DESIGN.md).
	coalesce = 100 * time.Millisecond
)

// Reader runs fn on one snapshot of this node's replica of partition p
// (partition.Router.ReadLocal, stale): an error when the node holds none or
// it closed during the read, else fn's own.
type Reader func(ctx context.Context, p uint64, fn func(state.Reader) error) error

// roomPos is how far an indexer got in one room: the room's messages with
// first <= seq <= pos may be in the index, none after pos.
type roomPos struct {
	first, pos uint64
}

// replica indexes one partition replica: a goroutine tails the rooms the
// apply notifier says were touched, and every sweepEvery compares all
// rooms of the replica with what it indexed.
type replica struct {
	p       uint64
	gen     any // the replica's incarnation the index was built from
	idx     *Index
	read    Reader
	applied func(p uint64) uint64 // nil: sweep every time
	// swept is the replica's applied index before the last sweep that
	// completed, 0 when none did (or a flush failure forgot positions):
	// while the replica's applied index is still swept, a sweep would find
	// nothing. Owned by the indexer goroutine.
	swept uint64

	mu    sync.Mutex // guards dirty; a leaf
	dirty map[string]bool
	wake  chan struct{}

	ready atomic.Bool // a first sweep indexed the whole replica
	// built is how long the index took to become ready (0 before).
	built   atomic.Int64
	started time.Time
	rooms   map[string]*roomPos
	done    chan struct{}
	// pending collects the changes of one sync (of the dirty rooms, or a
	// sweep) into one Bleve batch, one segment: flush applies it.
	pending *Batch
}

// maxPending is the most changes pending before they are applied.
const maxPending = 4096

// batch returns the pending batch, applying it first when full.
func (r *replica) batch() (*Batch, error) {
	if r.pending != nil && r.pending.Size() >= maxPending {
		if err := r.flush(); err != nil {
			return nil, err
		}
	}
	if r.pending == nil {
		r.pending = r.idx.NewBatch()
	}
	return r.pending, nil
}

// flush applies the pending changes. When Bleve fails to, the room
// positions no longer say what the index holds: they are forgotten, so the
// next sweep reads every room again (puts replace; a document that should
// have been deleted may stay, and the state check of hits hides it).
func (r *replica) flush() error {
	b := r.pending
	r.pending = nil
	if b == nil {
		return nil
	}
	err := r.idx.Apply(b)
	if err != nil {
		clear(r.rooms)
		r.swept = 0
	}
	return err
}

// finish ends a sync: what was read is applied whether or not the sync
// failed part way (the positions already count it).
func (r *replica) finish(err error) error {
	if ferr := r.flush(); err == nil {
		err = ferr
	}
	return err
}

// newReplica makes the indexer of partition p's replica of incarnation
// gen, reading and keeping its index as cfg says.
func newReplica(p uint64, gen any, cfg Config) (*replica, error) {
	idx, err := NewIndex(cfg.Dir)
	if err != nil {
		return nil, err
	}
	return &replica{p: p, gen: gen, idx: idx, read: cfg.Read, applied: cfg.Applied, dirty: map[string]bool{}, started: time.Now(),
		wake: make(chan struct{}, 1), rooms: map[string]*roomPos{}, done: make(chan struct{})}, nil
}

// markReady records that the index holds the whole replica, and the first
// time, how long building it took.
func (r *replica) markReady() {
	if !r.ready.Swap(true) {
		r.built.Store(int64(max(time.Since(r.started), time.Nanosecond)))
	}
}

// touched notes that room changed; it never blocks (the apply notifier
// calls it on the driver goroutine).
func (r *replica) touched(room string) {
	r.mu.Lock()
	r.dirty[room] = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run indexes until ctx ends, then closes the index.
func (r *replica) run(ctx context.Context, onErr func(error)) {
	defer close(r.done)
	defer func() { _ = r.idx.Close() }()
	t := time.NewTimer(0)
	defer t.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := r.sweepIfApplied(ctx); err != nil {
				onErr(err)
			} else {
				r.markReady()
			}
			t.Reset(sweepEvery)
		case <-r.wake:
			select {
			case <-ctx.Done():
				return
			case <-time.After(coalesce):
			}
			if err := r.syncDirty(ctx); err != nil {
				onErr(err)
			}
		}
	}
}

// syncDirty indexes the rooms touched since the last call.
func (r *replica) syncDirty(ctx context.Context) error {
	r.mu.Lock()
	rooms := r.dirty
	r.dirty = map[string]bool{}
	r.mu.Unlock()
	for room := range rooms {
		if err := r.syncRoom(ctx, room); err != nil {
			return r.finish(err)
		}
	}
	return r.finish(nil)
}

// sweep compares every room of the replica with the index: rooms gone are
// forgotten, history removed by retention is deleted, events not yet
// indexed are read.
func (r *replica) sweep(ctx context.Context) error {
	return r.finish(r.sweepRooms(ctx))
}

// sweepIfApplied sweeps unless the replica applied nothing since the last
// sweep that completed; swept says whether it did. The applied index is
// read before the sweep's snapshot, which therefore holds at least what it
// names: when it has not moved by the next call, neither has the state.
func (r *replica) sweepIfApplied(ctx context.Context) (swept bool, err error) {
	var at uint64
	if r.applied != nil {
		at = r.applied(r.p)
		if at != 0 && at == r.swept {
			return false, nil
		}
	}
	r.swept = 0
	if err := r.sweep(ctx); err != nil {
		return true, err
	}
	r.swept = at
	return true, nil
}

func (r *replica) sweepRooms(ctx context.Context) error {
	var live []chat.Room
	err := r.read(ctx, r.p, func(s state.Reader) error {
		var err error
		live, err = chat.LiveRooms(s)
		return err
	})
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(live))
	for _, rm := range live {
		seen[rm.Name] = true
		rp := r.rooms[rm.Name]
		if rp != nil && rp.pos >= rm.LastSeq && rp.first >= rm.FirstRetainedSeq {
			continue
		}
		if err := r.syncRoom(ctx, rm.Name); err != nil {
			return err
		}
	}
	for room := range r.rooms {
		if !seen[room] {
			if err := r.forget(room); err != nil {
				return err
			}
		}
	}
	return nil
}

// forget removes every indexed message of room (deleted).
func (r *replica) forget(room string) error {
	rp := r.rooms[room]
	if err := r.deleteRange(room, rp.first, rp.pos+1); err != nil {
		return err
	}
	delete(r.rooms, room)
	return nil
}

// deleteRange deletes room's messages lo <= seq < hi from the index.
func (r *replica) deleteRange(room string, lo, hi uint64) error {
	for seq := lo; seq < hi; seq++ {
		b, err := r.batch()
		if err != nil {
			return err
		}
		b.Delete(room, seq)
	}
	return nil
}

// syncRoom brings room's index up to the replica's state: it deletes what
// retention removed and indexes the events after the room's position,
// reading at most pagesPerRead pages per snapshot.
func (r *replica) syncRoom(ctx context.Context, room string) error {
	for {
		var rm chat.Room
		var found bool
		var pages [][]chat.Event
		rp := r.rooms[room]
		if rp == nil {
			rp = &roomPos{first: 1}
		}
		err := r.read(ctx, r.p, func(s state.Reader) error {
			var err error
			pages = pages[:0]
			if rm, found, err = chat.GetRoom(s, room); err != nil || !found {
				return err
			}
			pos := max(rp.pos, rm.FirstRetainedSeq-1)
			for range pagesPerRead {
				evs, err := chat.EventsAfter(s, room, pos, eventPage)
				if err != nil || len(evs) == 0 {
					return err
				}
				pages = append(pages, evs)
				pos = evs[len(evs)-1].Seq
			}
			return nil
		})
		switch {
		case err != nil && !errs.Is(err, errs.NotFound):
			return err
		case err != nil || !found:
			if r.rooms[room] != nil {
				return r.forget(room)
			}
			return nil
		}
		r.rooms[room] = rp
		if rm.FirstRetainedSeq > rp.first {
			if err := r.deleteRange(room, rp.first, min(rm.FirstRetainedSeq, rp.pos+1)); err != nil {
				return err
			}
			rp.first = rm.FirstRetainedSeq
		}
		rp.pos = max(rp.pos, rm.FirstRetainedSeq-1)
		for _, evs := range pages {
			if err := r.apply(room, evs); err != nil {
				return err
			}
			rp.pos = evs[len(evs)-1].Seq
		}
		if len(pages) < pagesPerRead || ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// apply indexes one page of room's events: a message is put with its
// current text (a deleted one removed), an edit puts its target as it is
// now, a delete removes its target.
func (r *replica) apply(room string, evs []chat.Event) error {
	for _, e := range evs {
		b, err := r.batch()
		if err != nil {
			return err
		}
		var msg *chat.Event
		switch e.Kind {
		case chat.KindMessage, chat.KindWhisper:
			msg = &e
		case chat.KindEdit:
			if msg = e.Message; msg == nil {
				continue // removed by retention meanwhile
			}
		case chat.KindDelete:
			b.Delete(room, e.Target)
			continue
		default:
			continue
		}
		if msg.Deleted {
			b.Delete(room, msg.Seq)
			continue
		}
		if err := b.Put(docOf(room, msg)); err != nil {
			return err
		}
	}
	return nil
}

// docOf is the index document of message e of room.
func docOf(room string, e *chat.Event) Doc {
	return Doc{Room: room, Seq: e.Seq, Ts: e.Ts, Sender: ident.Fold(e.Sender), Text: e.Text, Audience: e.Audience()}
}

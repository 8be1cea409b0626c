package search

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// reconcileEvery is how often Indexes compares its indexers with the
// replicas the node holds.
const reconcileEvery = time.Second

// Config configures the indexes of a node.
type Config struct {
	// Read reads one snapshot of a local replica.
	Read Reader
	// Applied returns the applied index of the local replica of a
	// partition (multiraft.Engine.Applied). An indexer skips its sweep
	// while it has not moved since the last one: nothing applied, nothing
	// to compare. nil: every sweep runs.
	Applied func(p uint64) uint64
	// Replicas returns the partitions (not the metadata group) this node
	// holds a replica of, each with a comparable value that changes when the
	// replica is opened again (multiraft.Incarnation): its index is then
	// built again from the new replica's state.
	Replicas func() map[uint64]any
	// Disabled turns indexing off: the node builds no index and answers
	// searches of its replicas as unavailable (benchmarks measure posts
	// with and without it).
	Disabled bool
	// Dir is where the indexes keep their files, one directory each,
	// removed when the index is dropped (the system's temporary directory
	// when ""). Whatever is in it when the node starts is stale: the node
	// empties it (RemoveStale).
	Dir string
	// Logger receives indexing failures. Default: discard.
	Logger *slog.Logger
}

// Indexes is a node's search indexes, one per local partition replica. Run
// keeps them in step with the replicas; Touched (the apply notifier's
// observer) wakes the indexer of a partition; SearchLocal answers one
// partition's part of a search. It is safe for concurrent use.
type Indexes struct {
	cfg Config

	mu       sync.Mutex // guards replicas; a leaf but for replica.mu
	replicas map[uint64]*replica
	cancels  map[uint64]context.CancelFunc
	wg       sync.WaitGroup
}

// NewIndexes returns a node's indexes; nothing runs until Run.
func NewIndexes(cfg Config) *Indexes {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Indexes{cfg: cfg, replicas: map[uint64]*replica{}, cancels: map[uint64]context.CancelFunc{}}
}

// Run starts and stops an indexer per local replica until ctx ends, then
// stops them all.
func (x *Indexes) Run(ctx context.Context) {
	if x.cfg.Disabled {
		return
	}
	t := time.NewTicker(reconcileEvery)
	defer t.Stop()
	for {
		x.reconcile(ctx)
		select {
		case <-ctx.Done():
			x.mu.Lock()
			for p, cancel := range x.cancels {
				cancel()
				delete(x.cancels, p)
				delete(x.replicas, p)
			}
			x.mu.Unlock()
			x.wg.Wait()
			return
		case <-t.C:
		}
	}
}

// RemoveStale removes what earlier runs left in Config.Dir (an index is
// never reopened: it is rebuilt from its replica). Call it before Run.
func (x *Indexes) RemoveStale() error {
	if x.cfg.Dir == "" {
		return nil
	}
	return os.RemoveAll(x.cfg.Dir)
}

// reconcile starts an indexer for every replica without one (or whose
// replica was opened again) and stops those of replicas gone.
func (x *Indexes) reconcile(ctx context.Context) {
	held := x.cfg.Replicas()
	x.mu.Lock()
	defer x.mu.Unlock()
	for p, r := range x.replicas {
		if gen, ok := held[p]; !ok || gen != r.gen {
			x.cancels[p]()
			delete(x.cancels, p)
			delete(x.replicas, p)
		}
	}
	for p, gen := range held {
		if x.replicas[p] != nil || ctx.Err() != nil {
			continue
		}
		r, err := newReplica(p, gen, x.cfg)
		if err != nil {
			x.cfg.Logger.Warn("search index not made", "partition", p, "err", err)
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		x.replicas[p], x.cancels[p] = r, cancel
		x.wg.Add(1)
		go func() {
			defer x.wg.Done()
			r.run(rctx, func(err error) {
				if rctx.Err() == nil {
					x.cfg.Logger.Debug("search indexing failed; retried", "partition", p, "err", err)
				}
			})
		}()
	}
}

// Partitions returns the partitions this node keeps an index of, ready or
// still being built, in increasing order.
func (x *Indexes) Partitions() []uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Sorted(maps.Keys(x.replicas))
}

// BuildTime returns how long this node's index of partition p took to
// become ready: false while there is none ready.
func (x *Indexes) BuildTime(p uint64) (time.Duration, bool) {
	x.mu.Lock()
	r := x.replicas[p]
	x.mu.Unlock()
	if r == nil || !r.ready.Load() {
		return 0, false
	}
	return time.Duration(r.built.Load()), true
}

// Touched wakes the indexer of partition p for room (a key the chat domain
// touched, chat.TouchedKey). It never blocks: the apply notifier calls it on
// the engine's driver goroutine.
func (x *Indexes) Touched(p uint64, room string) {
	x.mu.Lock()
	r := x.replicas[p]
	x.mu.Unlock()
	if r != nil {
		r.touched(room)
	}
}

// Result is one message a search found, as its reader may see it.
type Result struct {
	Room  string  `json:"room"`
	Seq   uint64  `json:"seq"`
	Score float64 `json:"score"`
	// Highlights are fragments of the message's text with the words that
	// matched in <mark></mark>, HTML-escaped (the text as indexed: within
	// a second of an edit, the current text).
	Highlights []string `json:"highlights,omitempty"`
	// Message is the message as it is now (chat.Event).
	Message chat.Event `json:"message"`
}

// SearchLocal searches this node's index of partition p for user
// (ErrNoIndex when there is none ready): the rooms
// user may read and the whispers user sent or receives, each hit checked
// against one snapshot of the replica's state.
func (x *Indexes) SearchLocal(ctx context.Context, p uint64, user string, spec Spec) ([]Result, error) {
	x.mu.Lock()
	r := x.replicas[p]
	x.mu.Unlock()
	if r == nil || !r.ready.Load() {
		return nil, ErrNoIndex
	}
	var out []Result
	err := x.cfg.Read(ctx, p, func(s state.Reader) error {
		out = out[:0]
		readable, others, err := chat.ReadableRooms(s, user)
		if err != nil {
			return err
		}
		hits, err := r.idx.Search(ctx, spec, Scope{User: ident.Fold(user), Readable: readable, Unreadable: others})
		if err != nil {
			return err
		}
		for _, h := range hits {
			ev, ok, err := chat.SearchHit(s, h.Room, user, h.Seq)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, Result{Room: h.Room, Seq: h.Seq, Score: h.Score, Highlights: h.Highlights, Message: ev})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ErrNoIndex is SearchLocal's answer when this node has no ready index of
// the partition: none is held here, or it is still being built. The
// fan-out asks another replica.
var ErrNoIndex = errs.New(errs.Unavailable, "no search index of the partition is ready here")

// Refresh brings the index of every replica Config.Replicas lists up to its
// state at once, on the calling goroutine, making the missing ones: for
// tests and tools that do not Run the indexes. It must not be called while
// Run runs.
func (x *Indexes) Refresh(ctx context.Context) error {
	for p, gen := range x.cfg.Replicas() {
		x.mu.Lock()
		r := x.replicas[p]
		x.mu.Unlock()
		if r == nil {
			var err error
			if r, err = newReplica(p, gen, x.cfg); err != nil {
				return err
			}
			x.mu.Lock()
			x.replicas[p] = r
			x.mu.Unlock()
		}
		if err := r.sweep(ctx); err != nil {
			return err
		}
		r.markReady()
	}
	return nil
}

package multiraft

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/transport"
)

// Engine runs all Raft groups of one node. All Raft state is owned by one
// goroutine, the driver loop; other goroutines talk to it through the inbox.
type Engine struct {
	cfg Config
	log *slog.Logger

	// mu guards the inbox and the groups map. The loop takes it briefly to
	// swap the inbox out; readers take it to find a group.
	mu        sync.Mutex
	msgs      []transport.GroupMessage
	proposals []*proposal
	reads     []*readRequest
	funcs     []func()
	groups    map[uint64]*group
	closed    bool
	wake      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	fatalErr  atomic.Pointer[error]
	diskSlow  atomic.Bool // set by the loop each tick (diskslow.go)
	readCtxID uint64      // loop-owned counter for ReadIndex request contexts
	confCtxID uint64      // loop-owned counter for conf change contexts
	ctxNonce  [8]byte     // random per engine: makes those contexts unique across nodes (requestContext)

	stats   Stats
	markers markerTable // checksum markers applied here (marker.go)

	loop loopState
	// bgCtx, bgCancel and bgWG run the loop's background work (snapshot
	// transfers, the dedup rule proposal); the loop cancels and waits for
	// it as it stops.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bgWG     sync.WaitGroup
	commits  chan *roundBatch // committed round batches, back to the loop
	commitWG sync.WaitGroup
}

func (e *Engine) ls() *loopState { return &e.loop }

// Stats are engine counters, read with atomic loads.
type Stats struct {
	// Rounds counts driver rounds that had at least one Ready.
	Rounds atomic.Uint64
	// RoundPauses counts the pauses the loop took after a committed round
	// while proposals waited (Config.RoundPause, pace.go).
	RoundPauses atomic.Uint64
	// Syncs counts rounds whose batch was fsynced.
	Syncs atomic.Uint64
	// EntriesApplied counts committed entries applied.
	EntriesApplied atomic.Uint64
	// ProposalsDropped counts proposals Raft refused (no leader, transfer).
	ProposalsDropped atomic.Uint64
	// CommitNanos is the time spent committing round batches (fsync
	// included); SyncNanos the part spent in synced commits.
	CommitNanos, SyncNanos atomic.Uint64
	// DiskDrops counts appends stepped without their entries and
	// leadership transfers refused (the disk was low, diskfull.go) and
	// DiskSheds leadership transfers started
	// because the disk was low or slow (diskslow.go).
	DiskDrops, DiskSheds atomic.Uint64
	// FullPeerStrips counts appends this node sent without their commands,
	// and snapshots it did not send, to a replica whose node's disk is
	// full (noteFullPeers).
	FullPeerStrips atomic.Uint64
}

// New returns an engine; call Start to run its loop.
func New(cfg Config) (*Engine, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:    cfg,
		log:    cfg.Logger,
		groups: map[uint64]*group{},
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	_, _ = rand.Read(e.ctxNonce[:])
	e.loop.outbox = map[string][]transport.GroupMessage{}
	e.commits = make(chan *roundBatch, maxInflightBatches)
	e.bgCtx, e.bgCancel = context.WithCancel(context.Background())
	return e, nil
}

// Stats returns the engine's counters.
func (e *Engine) Stats() *Stats { return &e.stats }

// Start runs the driver loop until Close.
func (e *Engine) Start() {
	go e.run()
}

// Close stops the loop and fails everything waiting on it. Groups' data stays
// in the store.
func (e *Engine) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		<-e.done
		return
	}
	e.closed = true
	e.mu.Unlock()
	close(e.stop)
	<-e.done
}

// Done returns a channel closed when the loop has stopped: after Close, or
// on a fatal error (Err), such as a failed write or fsync of a round batch.
// A failed fsync is never retried: what the file holds is unknown after it,
// so the store stops and the node restarts from what is durable.
func (e *Engine) Done() <-chan struct{} { return e.done }

// Err returns the fatal error that stopped the loop, if any.
func (e *Engine) Err() error {
	if p := e.fatalErr.Load(); p != nil {
		return *p
	}
	return nil
}

// notify wakes the loop.
func (e *Engine) notify() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// do runs fn on the loop goroutine and waits for it. It fails when the engine
// is closed or ctx ends first.
func (e *Engine) do(ctx context.Context, fn func()) error {
	done := make(chan struct{})
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	e.funcs = append(e.funcs, func() { fn(); close(done) })
	e.mu.Unlock()
	e.notify()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.done:
		return ErrClosed
	}
}

// post queues fn to run on the loop without waiting.
func (e *Engine) post(fn func()) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.funcs = append(e.funcs, fn)
	e.mu.Unlock()
	e.notify()
}

// Step hands incoming Raft messages to the loop. It never blocks.
func (e *Engine) Step(msgs []transport.GroupMessage) {
	e.mu.Lock()
	if !e.closed {
		e.msgs = append(e.msgs, msgs...)
	}
	e.mu.Unlock()
	e.notify()
}

// group returns the group with the given id, or nil.
func (e *Engine) group(id uint64) *group {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.groups[id]
}

// Groups returns the ids of the groups this node holds a replica of.
func (e *Engine) Groups() []uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]uint64, 0, len(e.groups))
	for id := range e.groups {
		ids = append(ids, id)
	}
	return ids
}

// HasGroup reports whether this node holds a replica of the group.
func (e *Engine) HasGroup(id uint64) bool { return e.group(id) != nil }

// Incarnation identifies this node's replica of a group as it was opened:
// closing the replica (and destroying its state) and opening it again, even
// under the same replica id, gives a different Incarnation. A reader of the
// group's local state takes one before and after reading: when they differ,
// what was read may be an emptied state and is worthless.
type Incarnation struct{ g *group }

// Held reports whether the node held a replica when the Incarnation was
// taken.
func (i Incarnation) Held() bool { return i.g != nil }

// Incarnation returns the current incarnation of this node's replica of the
// group (not Held when it has none).
func (e *Engine) Incarnation(id uint64) Incarnation { return Incarnation{g: e.group(id)} }

// Leader returns the replica id this node believes leads the group (0 when
// unknown) and whether that is this node's own replica.
func (e *Engine) Leader(id uint64) (leader uint64, local bool) {
	g := e.group(id)
	if g == nil {
		return 0, false
	}
	l := g.leader.Load()
	return l, l != 0 && l == g.replica
}

// Applied returns the applied index of the local replica of a group.
func (e *Engine) Applied(id uint64) uint64 {
	if g := e.group(id); g != nil {
		return g.appliedIdx.Load()
	}
	return 0
}

// StaleMs returns how far behind its leader the local replica of a group may
// be, in milliseconds: 0 on the leader, otherwise the time since it last knew
// itself caught up with the leader's commit index. ok is false when the node
// has no replica of the group.
func (e *Engine) StaleMs(id uint64) (ms int64, ok bool) {
	g := e.group(id)
	if g == nil {
		return 0, false
	}
	if l := g.leader.Load(); l != 0 && l == g.replica {
		return 0, true
	}
	at := g.caughtUpAt.Load()
	if at == 0 {
		return -1, true
	}
	return max(0, time.Now().UnixMilli()-at), true
}

// OpenGroup starts (or restarts) this node's replica of a group. When the
// group has no stored state and peers is non-empty, the group is bootstrapped
// with those voters; otherwise it waits for a leader to contact it.
func (e *Engine) OpenGroup(ctx context.Context, id, replica uint64, peers []uint64) error {
	var err error
	if derr := e.do(ctx, func() { _, err = e.openGroup(id, replica, peers) }); derr != nil {
		return derr
	}
	return err
}

// CloseGroup stops replica, the local replica of a group, and, when destroy
// is set, deletes its data (after the replica was removed from the group) and
// records it as removed, never to be opened again (ErrReplicaRemoved). It
// does nothing if the node holds no replica of the group or another one.
func (e *Engine) CloseGroup(ctx context.Context, id, replica uint64, destroy bool) error {
	for {
		var err error
		busy := false
		derr := e.do(ctx, func() {
			g := e.groups[id]
			if g == nil || g.replica != replica {
				return
			}
			if g.inFlight {
				busy = true // its batch is being committed: wait for it
				return
			}
			e.mu.Lock()
			delete(e.groups, id)
			e.mu.Unlock()
			g.failAll(errs.New(errs.Unavailable, "replica of group %d closed", id))
			if destroy {
				err = e.cfg.DB.DestroyGroup(id, replica)
			}
		})
		if derr != nil {
			return derr
		}
		if !busy {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// TransferLeadership asks every group this node leads to hand leadership to
// its most up-to-date follower, and waits until each of those groups knows
// a leader elsewhere, or ctx ends. A group whose election is already
// running (a transfer the leader balancer began, say) is waited for too, for
// up to two election timeouts: a node that leaves in the middle of it leaves
// the group leaderless for a moment more.
func (e *Engine) TransferLeadership(ctx context.Context) error {
	handing := map[uint64]bool{}
	electing := time.Now().Add(2 * time.Duration(e.cfg.ElectionTicks) * e.cfg.TickInterval)
	for {
		pending := 0
		waitElections := time.Now().Before(electing)
		err := e.do(ctx, func() {
			for id, g := range e.groups {
				st := g.rn.Status()
				if st.RaftState != raft.StateLeader {
					electing := st.Lead == 0 || (handing[id] && st.Lead == g.replica)
					if electing && (handing[id] || waitElections) {
						pending++ // the new leader's election is still running
					}
					continue
				}
				if st.LeadTransferee != raft.None {
					// A transfer is under way: asking again, for another
					// follower as up to date, would abort it and could start
					// two campaigns that split the vote.
					pending++
					continue
				}
				if best := transferTarget(st); best != 0 {
					handing[id] = true
					pending++
					g.rn.TransferLeader(best)
					e.markTouched(g)
				}
			}
		})
		if err != nil || pending == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(e.cfg.TickInterval / 4):
		}
	}
}

// transferTarget is the voter a leader whose status is st hands over to:
// the follower with the highest match, the lowest id among equals, so that
// every ask names the same one; 0 when there is none.
func transferTarget(st raft.Status) uint64 {
	var best, bestMatch uint64
	for rid, pr := range st.Progress {
		if rid == st.ID || pr.IsLearner {
			continue
		}
		if best == 0 || pr.Match > bestMatch || pr.Match == bestMatch && rid < best {
			best, bestMatch = rid, pr.Match
		}
	}
	return best
}

// ProposeConfChange proposes a membership change to a group this node leads
// and waits until it is applied here and Raft has been told so, so that the
// next change may be proposed at once. A change Raft would ignore (one
// proposed while another may be pending, confpending.go) is refused at once
// with ErrConfChangePending; a leader that steps down before the change
// applies ends the call with NotLeaderError (the change may still apply).
// Callers must check the applied membership (GroupStatus) rather than trust
// a nil error alone.
func (e *Engine) ProposeConfChange(ctx context.Context, id uint64, cc raftpb.ConfChangeV2) error {
	var err error
	var wait chan error
	derr := e.do(ctx, func() {
		g := e.groups[id]
		if g == nil {
			err = &NoReplicaError{Group: id}
			return
		}
		if g.leader.Load() != g.replica {
			err = &NotLeaderError{Group: id, Leader: g.leader.Load()}
			return
		}
		if g.confChangeBlocked() {
			err = ErrConfChangePending
			return
		}
		e.confCtxID++
		cc.Context = e.requestContext("cc", e.confCtxID)
		if perr := g.rn.ProposeConfChange(cc); perr != nil {
			err = &NotLeaderError{Group: id, Leader: g.leader.Load()}
			return
		}
		e.markTouched(g)
		wait = make(chan error, 1)
		g.confWaits[string(cc.Context)] = wait
	})
	if derr != nil {
		return derr
	}
	if err != nil {
		return err
	}
	select {
	case err := <-wait:
		return err
	case <-ctx.Done():
		// Forget the wait, so that the group takes a next change (this one
		// may still apply; the caller re-reads the configuration).
		key := string(cc.Context)
		e.post(func() {
			if g := e.groups[id]; g != nil {
				delete(g.confWaits, key)
			}
		})
		return errs.Wrap(errs.Timeout, ctx.Err(), "membership change of group %d not applied in time", id)
	case <-e.done:
		return ErrClosed
	}
}

// Campaign makes the local replica of a group start an election now.
func (e *Engine) Campaign(ctx context.Context, id uint64) error {
	var err error
	derr := e.do(ctx, func() {
		if g := e.groups[id]; g != nil {
			err = g.rn.Campaign()
			e.markTouched(g)
		}
	})
	if derr != nil {
		return derr
	}
	return err
}

// TransferLeader asks the local replica of a group, if it leads, to hand
// leadership to another replica.
func (e *Engine) TransferLeader(ctx context.Context, id, to uint64) error {
	return e.do(ctx, func() {
		if g := e.groups[id]; g != nil && g.isLeader {
			g.rn.TransferLeader(to)
			e.markTouched(g)
		}
	})
}

// requestContext returns the context of this engine's n-th request of a
// kind ("ri" for ReadIndex, "cc" for a conf change): the kind, the engine's
// random nonce and n. Every replica of a group sends its own, to the same
// leader, so a bare counter is not enough: the leader keeps one pending
// ReadIndex per context and ignores a second request with the same one, so
// two nodes whose counters met lost one of the reads until it was sent
// again (Config.ReadRetry later), and every caller behind it waited; a conf
// change applied here would release the wait of another node's change.
func (e *Engine) requestContext(kind string, n uint64) []byte {
	b := make([]byte, 0, len(kind)+len(e.ctxNonce)+8)
	b = append(b, kind...)
	b = append(b, e.ctxNonce[:]...)
	return binary.BigEndian.AppendUint64(b, n)
}

package multiraft

import (
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/storage"
)

// group is this node's replica of one Raft group. Fields without atomics are
// owned by the driver loop.
type group struct {
	id      uint64
	replica uint64
	rn      *raft.RawNode
	st      *storage.GroupStorage
	sm      state.Applier

	applied     uint64
	appliedTerm uint64
	confState   raftpb.ConfState
	// member says confState lists the replica; removed, that a change or a
	// snapshot took it out after it was in (setConfState).
	member, removed bool
	// dedupRuleNext is when this leader may next propose the dedup rule
	// command (maybeProposeDedupCommand).
	dedupRuleNext time.Time
	// dedupSweepNext is when this leader may next propose a dedup sweep.
	dedupSweepNext time.Time
	// lastCommand is the index of the last command this replica applied;
	// idleMark and idleSince, when the leader's tick last saw it change: a
	// leader sweeps expired dedup records only once the group is idle.
	lastCommand, idleMark uint64
	idleSince             time.Time
	touched               bool // in the loop's ready set this round
	isLeader              bool
	// lostLog is set once a heartbeat showed that the replica lost entries
	// it had acknowledged (lostlog.go).
	lostLog bool

	// Published for other goroutines.
	leader atomic.Uint64 // replica id of the known leader, 0 if none
	// handingOver is set while the local replica leads with a full disk and
	// hands the group to a replica that may lead (diskfull.go).
	handingOver atomic.Bool
	// shedLooked is set once the loop has looked for a replica to hand the
	// group to (shedLeadership) and cleared by a tick that sheds nothing:
	// while set, a write on a full disk need not ask the loop to look.
	shedLooked atomic.Bool
	// fullPeers are the replicas on nodes whose disk is full, while this
	// replica leads: their appends go without commands (noteFullPeers).
	// Loop only.
	fullPeers  map[uint64]bool
	appliedIdx atomic.Uint64
	caughtUpAt atomic.Int64 // unix ms when the replica last knew it had applied the leader's commit

	proposals map[string][]*proposal // by proposal id, on the node that proposed
	confWaits map[string]chan error
	// confApplied are the waiters of conf changes applied this round,
	// answered once Raft is advanced past them.
	confApplied []chan error
	// confFloor mirrors Raft's pendingConfIndex (confpending.go), set for
	// the leadership of term confTerm.
	confFloor, confTerm uint64

	pendingReads []*readRequest // not yet sent as a ReadIndex
	inflight     *readBatch     // sent, waiting for its ReadState
	readyReads   []*readBatch   // read index known, waiting for apply

	// Apply state kept in memory; nil dedup means "load it from the state
	// first" (after opening, or after a snapshot replaced the state).
	dedup      *dedupCache
	lastTimeMs int64

	prepared      *storage.PreparedSnapshot // received snapshot data waiting for Raft to accept it
	preparedIndex uint64
	// Replica lag (lag.go): leader stamps of the entries applied this
	// round, the highest leader commit index heard of, the latest sample.
	lagStamps    []int64
	leaderCommit uint64
	lagMs        atomic.Int64
	lagEntries   atomic.Uint64
	lagAt        atomic.Int64 // unix ms when the latest sample was taken

	applyPending bool   // in the round's list of groups that applied
	inFlight     bool   // its last Ready is in a batch being committed
	durable      uint64 // last log index known fsynced here
}

// openGroup creates the in-memory replica of a group on the loop goroutine.
func (e *Engine) openGroup(id, replica uint64, peers []uint64) (*group, error) {
	if g := e.groups[id]; g != nil {
		if g.replica != replica {
			return nil, fmt.Errorf("multiraft: group %d already open as replica %d, not %d", id, g.replica, replica)
		}
		return g, nil
	}
	if removed, err := e.cfg.DB.RemovedReplica(id); err != nil {
		return nil, fmt.Errorf("multiraft: open group %d: %w", id, err)
	} else if replica <= removed {
		return nil, fmt.Errorf("group %d, replica %d: %w", id, replica, ErrReplicaRemoved)
	}
	st, err := e.cfg.DB.Group(id)
	if err != nil {
		return nil, fmt.Errorf("multiraft: open storage of group %d: %w", id, err)
	}
	ap := st.Applied()
	rc := &raft.Config{
		ID:                        replica,
		ElectionTick:              e.cfg.ElectionTicks,
		HeartbeatTick:             e.cfg.HeartbeatTicks,
		Storage:                   st,
		Applied:                   ap.Index,
		MaxSizePerMsg:             e.cfg.MaxSizePerMsg,
		MaxCommittedSizePerReady:  64 << 20,
		MaxUncommittedEntriesSize: 256 << 20,
		MaxInflightMsgs:           e.cfg.MaxInflightMsgs,
		MaxInflightBytes:          e.cfg.MaxInflightBytes,
		CheckQuorum:               true,
		PreVote:                   true,
		StepDownOnRemoval:         true,
		ReadOnlyOption:            raft.ReadOnlySafe,
		Logger:                    &raftLogger{log: e.log.With("group", id, "replica", replica)},
	}
	rn, err := raft.NewRawNode(rc)
	if err != nil {
		return nil, fmt.Errorf("multiraft: start group %d: %w", id, err)
	}
	last, err := st.LastIndex()
	if err != nil {
		return nil, err
	}
	hs, _, err := st.InitialState()
	if err != nil {
		return nil, err
	}
	if len(peers) > 0 && last == 0 && raft.IsEmptyHardState(hs) {
		ps := make([]raft.Peer, len(peers))
		for i, p := range peers {
			ps[i] = raft.Peer{ID: p}
		}
		if err := rn.Bootstrap(ps); err != nil {
			return nil, fmt.Errorf("multiraft: bootstrap group %d: %w", id, err)
		}
	}
	g := &group{
		id:          id,
		replica:     replica,
		rn:          rn,
		st:          st,
		sm:          e.cfg.Applier(id),
		applied:     ap.Index,
		appliedTerm: ap.Term,
		confState:   ap.ConfState,
		member:      isMember(ap.ConfState, replica),
		proposals:   map[string][]*proposal{},
		confWaits:   map[string]chan error{},
	}
	g.appliedIdx.Store(ap.Index)
	g.durable = last
	e.mu.Lock()
	e.groups[id] = g
	e.mu.Unlock()
	e.markTouched(g)
	e.log.Debug("group opened", "group", id, "replica", replica, "applied", ap.Index)
	return g, nil
}

// failAll fails every waiter of the group with err.
func (g *group) failAll(err error) {
	for id, ps := range g.proposals {
		for _, p := range ps {
			p.finish(nil, err)
		}
		delete(g.proposals, id)
	}
	for _, r := range g.pendingReads {
		r.finish(err)
	}
	g.pendingReads = nil
	if g.inflight != nil {
		g.inflight.finish(err)
		g.inflight = nil
	}
	for _, b := range g.readyReads {
		b.finish(err)
	}
	g.readyReads = nil
}

// setConfState records the group's membership after a change or a snapshot.
// The replica counts as removed only when it was a member and no longer is:
// a replica added to the group catches up by applying the changes made
// before it was added (from the leader's log, or a snapshot older than its
// addition), and none of them removes it.
func (g *group) setConfState(cs raftpb.ConfState) {
	g.confState = cs
	now := isMember(cs, g.replica)
	if g.member && !now {
		g.removed = true
	}
	g.member = now
}

// isMember reports whether replica is a voter or learner in cs.
func isMember(cs raftpb.ConfState, replica uint64) bool {
	for _, set := range [][]uint64{cs.Voters, cs.Learners, cs.VotersOutgoing, cs.LearnersNext} {
		for _, id := range set {
			if id == replica {
				return true
			}
		}
	}
	return false
}

// nowMs is the wall clock in Unix milliseconds.
func nowMs() int64 { return time.Now().UnixMilli() }

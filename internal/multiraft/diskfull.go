package multiraft

import (
	"context"
	"time"

	"go.etcd.io/raft/v3"
	raftpb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// A node whose disk is (nearly) full — storage.DB.CheckSpace reports
// ErrDiskFull once less than the reserve is left — must never meet ENOSPC
// inside Pebble (its commit pipeline cannot survive a failed WAL write) and
// must never acknowledge an entry it did not write. So while the disk is
// low the engine:
//
//   - steps appends that carry commands without their entries, and refuses
//     snapshots, so it writes no commands: it acknowledges only the prefix
//     of the log it holds (an append of no entries is a valid Raft message),
//     the leader keeps probing it (its append window never fills with
//     appends that will get no answer), and it catches up by itself once
//     space returns. Heartbeats, empty entries and membership changes still
//     step whole: a few bytes of the reserve each;
//   - ticks only the groups it leads, so its followers never start an
//     election they would have to write for;
//   - drops a leader's MsgTimeoutNow, so that no leadership transfer (the
//     planner's balancing acts on gossip, which lags the disk) hands it a
//     group it would have to hand back at once;
//   - hands the leadership of every group it leads to the most up-to-date
//     follower whose node's disk is fine (Config.PeerDisk), or, with none,
//     slow but not full (a slow disk still takes writes, a full one none),
//     once per tick until one takes it. While it hands a
//     group over, Propose answers "not the leader" (NotLeaderError with no
//     leader: the router retries and finds the new one) rather than 507,
//     since the group can still take writes. With every disk full it keeps
//     leading: reads still work, writes get 507 at Propose.

// PeerDisk is what the node layer knows of the disk of the node holding
// another replica (Config.PeerDisk), best first.
type PeerDisk uint8

// PeerDisk values.
const (
	// PeerDiskFine: the node may take the group's leadership.
	PeerDiskFine PeerDisk = iota
	// PeerDiskSlow: the node's disk is slow; it takes leadership only from
	// a node whose disk is full.
	PeerDiskSlow
	// PeerDiskUnfit: the replica is unknown; it takes no leadership.
	PeerDiskUnfit
	// PeerDiskFull: the node's disk is full; it takes no leadership, and
	// a leader sends it appends without their commands (fullPeers).
	PeerDiskFull
)

// diskLow reports whether the node's disk is below its reserve.
func (e *Engine) diskLow() bool { return e.cfg.DB.CheckSpace() != nil }

// dropForDisk reports whether the incoming message m must be dropped, or
// stepped without its entries, because the disk is low (asked of low only
// then, so the heartbeats and votes of every round cost no check): it is
// a transfer's MsgTimeoutNow (dropped whole; the leader's transfer lapses
// after an election timeout), or it carries commands to append (stepped
// without them). Empty entries (a new leader's, which it must commit before it
// can serve reads) and membership changes are a few bytes each and still
// step, so that a group whose replicas all have full disks can still elect
// a leader and read.
func dropForDisk(m raftpb.Message, low func() bool) bool {
	if m.Type == raftpb.MsgTimeoutNow {
		return low()
	}
	return carriesCommands(m) && low()
}

// carriesCommands reports whether m is an append with at least one command
// (a normal entry with data) among its entries.
func carriesCommands(m raftpb.Message) bool {
	if m.Type != raftpb.MsgApp {
		return false
	}
	for _, ent := range m.Entries {
		if ent.Type == raftpb.EntryNormal && len(ent.Data) > 0 {
			return true
		}
	}
	return false
}

// noteFullPeers records, for a group this node leads, which of its other
// replicas are on nodes whose disk is full (Config.PeerDisk, from gossip):
// queueMessages strips the entries of appends carrying commands to them.
// Such a replica would step them without their entries anyway
// (dropForDisk), and while it lags, the leader's probe re-sends up to
// MaxSizePerMsg of entries to it every heartbeat: bytes encoded, carried
// and decoded only to be dropped. It runs on the loop, once per tick.
// Gossip lags the disk: for up to a gossip round after space returns the
// replica is still sent appends without commands, and catches up after.
func (e *Engine) noteFullPeers(g *group) {
	if e.cfg.PeerDisk == nil {
		return
	}
	clear(g.fullPeers)
	g.rn.WithProgress(func(id uint64, _ raft.ProgressType, _ tracker.Progress) {
		if id != g.replica && e.cfg.PeerDisk(g.id, id) == PeerDiskFull {
			if g.fullPeers == nil {
				g.fullPeers = map[uint64]bool{}
			}
			g.fullPeers[id] = true
		}
	})
}

// tickGroups ticks every group, or, while the disk is low, only the groups
// this node leads, each of which it then tries to hand over; while the
// disk is slow (diskslow.go) it ticks every group and tries to hand over
// those it leads.
func (e *Engine) tickGroups() {
	low := e.diskLow()
	shed := e.checkDiskSlow(time.Now()) || low
	for _, g := range e.groups {
		if low && !g.isLeader {
			continue
		}
		g.rn.Tick()
		if g.isLeader {
			e.noteFullPeers(g)
		} else if len(g.fullPeers) > 0 {
			clear(g.fullPeers)
		}
		if shed && g.isLeader {
			e.shedLeadership(g, low)
		} else {
			g.handingOver.Store(false)
			g.shedLooked.Store(false)
		}
		e.markTouched(g)
	}
}

// shedNow has the loop start handing g over at once, as its next tick
// would, and waits until it did (or ctx ends, or the engine closes):
// Propose calls it for a write that finds the disk full while g's replica
// leads and the loop has not looked for a taker since, because the disk
// filled after the loop's last tick. Without it that write would be refused
// with 507 though another replica may take it a moment later. Once the
// loop has looked (shedLooked), writes that find no hand-over running are
// refused at once: a full cluster's refusals cost the loop nothing.
// It reports, as the loop saw it, whether the write may succeed elsewhere
// or on a retry: the replica no longer leads g, or hands it over, or the
// disk has room again; false when ctx or the engine ended first.
func (e *Engine) shedNow(ctx context.Context, g *group) bool {
	done := make(chan struct{})
	var elsewhere bool
	e.post(func() {
		defer close(done)
		if e.groups[g.id] != g || !g.isLeader || !e.diskLow() {
			elsewhere = true
			return
		}
		e.shedLeadership(g, true)
		e.markTouched(g)
		elsewhere = g.handingOver.Load()
	})
	select {
	case <-done:
		return elsewhere
	case <-ctx.Done():
	case <-e.done:
	}
	return false
}

// shedLeadership asks g, which this node leads, to transfer leadership to
// its most up-to-date voter on a node whose disk is fine, or, when this
// node's disk is full, on a node whose disk is at least not full either;
// unless a transfer is running already, which counts as the hand-over.
func (e *Engine) shedLeadership(g *group, full bool) {
	st := g.rn.Status()
	if st.RaftState != raft.StateLeader {
		return
	}
	if st.LeadTransferee != 0 {
		// A transfer is already under way (the planner's balancing, an
		// operator's, or this loop's own): the group is being handed
		// over, and Raft drops proposals until it is done or lapses.
		g.handingOver.Store(true)
		g.shedLooked.Store(true)
		return
	}
	worst := PeerDiskFine
	if full {
		worst = PeerDiskSlow
	}
	var best, bestMatch uint64
	bestDisk := PeerDiskUnfit
	for rid, pr := range st.Progress {
		if rid == g.replica || pr.IsLearner {
			continue
		}
		d := PeerDiskFine
		if e.cfg.PeerDisk != nil {
			d = e.cfg.PeerDisk(g.id, rid)
		}
		if d > worst || d > bestDisk || d == bestDisk && pr.Match < bestMatch {
			continue
		}
		best, bestMatch, bestDisk = rid, pr.Match, d
	}
	g.handingOver.Store(best != 0)
	g.shedLooked.Store(true)
	if best != 0 {
		g.rn.TransferLeader(best)
		e.stats.DiskSheds.Add(1)
	}
}

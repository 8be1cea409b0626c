package multiraft

import (
	"errors"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// ErrConfChangePending is returned by ProposeConfChange when Raft would
// ignore the change: an earlier change of the group, or the entries before
// its leader's term, are not applied yet. Retry once they are (the node's
// reconciler does on its next pass).
var ErrConfChangePending = errors.New("multiraft: an earlier membership change of the group is not applied yet")

// The raft library refuses a configuration change while one may be pending
// (its pendingConfIndex above its applied index) — but silently: it appends
// an empty entry in its place and returns no error, so a caller waiting for
// the change to apply would wait until its deadline. pendingConfIndex is
// raised when a replica becomes leader (to its last index then, since an
// unapplied change may hide there), and to the index of every change it
// appends (proposed, or the automatic leave of a joint configuration). The
// engine mirrors it in group.confFloor from the leader's Readies, so that
// ProposeConfChange refuses at once what Raft would drop.

// noteLeaderEntries raises g.confFloor from the entries a leader appends in
// one Ready: to the index before the first entry of its term when it has
// just become leader (that entry is the empty one Raft appends on election),
// and to every configuration change's index. electedIn is the term of the
// election the replica has just won, 0 when it led before this Ready.
func (g *group) noteLeaderEntries(ents []raftpb.Entry, electedIn uint64) {
	for _, ent := range ents {
		if electedIn != 0 && ent.Term == electedIn {
			// Set, not raised, as Raft sets it on election: a change this
			// replica appended while it led before may have been overwritten.
			g.confFloor = ent.Index - 1
			electedIn = 0
		}
		if ent.Type == raftpb.EntryConfChange || ent.Type == raftpb.EntryConfChangeV2 {
			g.confFloor = max(g.confFloor, ent.Index)
		}
	}
}

// electedIn returns, for a leader's Ready, the term of the election it
// shows the replica has just won — it was not leader before this Ready
// (wasLeader), or the Ready's hard state moved to a term other than the one
// it led in (it lost and won again between two Readies) — and 0 when it
// shows none.
func (g *group) electedIn(wasLeader bool, hs raftpb.HardState) uint64 {
	if wasLeader && (raft.IsEmptyHardState(hs) || hs.Term == g.confTerm) {
		return 0
	}
	g.confTerm = g.rn.BasicStatus().Term
	return g.confTerm
}

// confChangeBlocked reports whether Raft would ignore a configuration
// change proposed now: one is waiting to be appended or applied, or the
// floor is above what Raft counts applied. Loop only.
func (g *group) confChangeBlocked() bool {
	return len(g.confWaits) > 0 || g.confFloor > g.rn.BasicStatus().Applied
}

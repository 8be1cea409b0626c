package multiraft

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
)

// waitApplied waits until every engine of tn applied group 1 up to index.
func waitApplied(t *testing.T, tn *testNet, index uint64) {
	t.Helper()
	poll.Until(t, 10*time.Second, fmt.Sprintf("every replica applied %d", index), func() error {
		for name, e := range tn.net.engines {
			if a := e.Applied(1); a < index {
				return fmt.Errorf("%s applied %d", name, a)
			}
		}
		return nil
	})
}

// waitTotal waits until node's replica of group 1 holds the counter total.
func waitTotal(t *testing.T, tn *testNet, node string, total uint64) {
	t.Helper()
	poll.Until(t, 10*time.Second, fmt.Sprintf("%s holds the total %d", node, total), func() error {
		v, _, _ := tn.dbs[node].State(1).Get([]byte("n"))
		if len(v) != 8 || binary.BigEndian.Uint64(v) != total {
			return fmt.Errorf("applied %d, holds %v", tn.net.engines[node].Applied(1), v)
		}
		return nil
	})
}

// logLen returns how many entries node's replica of group 1 holds.
func logLen(t *testing.T, tn *testNet, node string) uint64 {
	t.Helper()
	g, err := tn.dbs[node].Group(1)
	if err != nil {
		t.Fatal(err)
	}
	first, err := g.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	last, err := g.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return last + 1 - first
}

// With every replica caught up, each keeps only a tail of its log (a tenth
// of the compaction threshold, plus what one compaction step leaves), not
// half the threshold or more: entries go while they are still in Pebble's
// memtable, instead of being flushed and compacted first.
func TestEngine_LogKeepsATailWhenEveryReplicaHasIt(t *testing.T) {
	const limit = 200 // tail 20, step 10
	tn := newTestNet(t, 3, limit)
	for range 3 * limit {
		tn.propose(NewProposalID(), 1)
	}
	// The leader learns its followers' matches after it applied; one more
	// entry, once all applied, lets every replica compact with what it knows.
	last := tn.leader().Applied(1)
	waitApplied(t, tn, last)
	tn.propose(NewProposalID(), 1)
	waitApplied(t, tn, last+1)
	for name := range tn.net.engines {
		if n, most := logLen(t, tn, name), logTail(limit)+logStep(limit)+5; n > most {
			t.Errorf("%s keeps %d entries, want at most %d", name, n, most)
		}
	}
}

// A leader keeps the entries a replica it cannot reach still needs, up to
// the compaction threshold, so that the replica catches up from the log
// when it returns, without a snapshot.
func TestEngine_LeaderKeepsTheLogForALaggingReplica(t *testing.T) {
	const limit = 200
	tn := newTestNet(t, 3, limit)
	victim := tn.follower()
	total := tn.writeWhileDown(victim, limit/2) // more than the tail, less than the limit
	waitTotal(t, tn, victim, total)
	if sent := tn.snapshotsSentTo(victim); sent != 0 {
		t.Fatalf("%d snapshots sent to %s, want none: it was %d entries behind, under the limit %d", sent, victim, limit/2, limit)
	}
}

// A leader cut off loses its leadership; when it returns, the new leader,
// which kept only the tail while it followed, still has the entries the
// old leader lacks (it counts a replica that has not answered yet as
// lacking everything it holds, up to the threshold), so no snapshot.
func TestEngine_NewLeaderKeepsTheLogForTheOldOne(t *testing.T) {
	const limit = 200 // tail 20
	tn := newTestNet(t, 3, limit)
	for range limit {
		tn.propose(NewProposalID(), 1)
	}
	old := tn.nameOf(tn.leader())
	total := tn.writeWhileDown(old, 3*limit/4) // past half the limit, under the limit
	waitTotal(t, tn, old, total)
	if sent := tn.snapshotsSentTo(old); sent != 0 {
		t.Fatalf("%d snapshots sent to the old leader %s, want none: it was %d entries behind, under the limit %d", sent, old, 3*limit/4, limit)
	}
}

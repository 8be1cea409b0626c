package multiraft

import (
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
)

// A round that only advances the commit index (its entries durable and
// applied early) writes nothing: each replica commits about two batches to
// its store per entry at one proposer (the synced append and the early
// apply), not three, and the replicas still agree. The saved hard state then
// trails the applied index, which the store makes up for when it opens.
func TestEngine_CommitOnlyRoundsWriteNothing(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	tn.propose(NewProposalID(), 1) // elect and settle
	before := map[string]uint64{}
	for name, db := range tn.dbs {
		before[name] = db.CommitCount()
	}
	const entries = 60
	var total uint64
	for range entries {
		total = tn.propose(NewProposalID(), 1)
	}
	applied := tn.leader().Applied(1)
	poll.Until(t, 10*time.Second, "every replica applied", func() bool {
		for _, e := range tn.net.engines {
			if e.Applied(1) < applied {
				return false
			}
		}
		return true
	})
	if total != entries+1 {
		t.Fatalf("total %d, want %d", total, entries+1)
	}
	for name, db := range tn.dbs {
		perEntry := float64(db.CommitCount()-before[name]) / entries
		t.Logf("%s: %.2f store commits per entry", name, perEntry)
		if perEntry > 2.4 {
			t.Errorf("%s: %.2f store commits per entry, want at most 2.4 (a commit-only round wrote)", name, perEntry)
		}
		g, err := db.Group(1)
		if err != nil {
			t.Fatal(err)
		}
		if hs := g.HardState(); hs.Commit >= applied {
			t.Errorf("%s: saved commit %d, applied %d: commit-only hard states were written", name, hs.Commit, applied)
		}
	}
}

package multiraft

import "testing"

// A round that only advances the commit index (its entries durable and
// applied early) writes nothing. With one proposal at a time, the leader
// commits two batches to its store per entry (the synced append, and the
// early apply once a follower acknowledged it), not three, and its saved
// commit index trails the applied one, which the store makes up for when it
// opens. Followers are only logged: how their rounds fall depends on how
// the leader's messages happen to be batched.
func TestEngine_CommitOnlyRoundsWriteNothing(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	tn.propose(NewProposalID(), 1) // elect and settle
	leader := tn.leader()
	name := ""
	for n, e := range tn.net.engines {
		if e == leader {
			name = n
		}
	}
	db := tn.dbs[name]
	before := db.CommitCount()
	const entries = 60
	var total uint64
	for range entries {
		total = tn.propose(NewProposalID(), 1)
	}
	if total != entries+1 {
		t.Fatalf("total %d, want %d", total, entries+1)
	}
	if tn.leader() != leader {
		t.Skip("leadership moved during the run")
	}
	applied := leader.Applied(1)
	waitApplied(t, tn, applied)
	perEntry := float64(db.CommitCount()-before) / entries
	t.Logf("leader %s: %.2f store commits per entry", name, perEntry)
	if perEntry > 2.4 {
		t.Errorf("leader: %.2f store commits per entry, want at most 2.4 (a commit-only round wrote)", perEntry)
	}
	g, err := db.Group(1)
	if err != nil {
		t.Fatal(err)
	}
	if hs := g.HardState(); hs.Commit >= applied {
		t.Errorf("leader: saved commit %d, applied %d: a commit-only hard state was written", hs.Commit, applied)
	}
}

package multiraft

import (
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/state"
)

// dedupRecords counts the dedup records in the state of group 1 on node.
func (tn *testNet) dedupRecords(node string) int {
	tn.t.Helper()
	n := 0
	err := tn.dbs[node].State(1).Scan(prefixDedup, state.PrefixEnd(prefixDedup), func(_, _ []byte) bool {
		n++
		return true
	})
	if err != nil {
		tn.t.Fatal(err)
	}
	return n
}

// Under steady writes the dedup records stay bounded by the window once the
// group moved to rule 2: expired ones are deleted faster than new ones are
// made. (Under rule 1, half a record per entry at most, 1,200 writes left
// 775 records with a 20 ms window.) The leader proposes the move itself once
// every node speaks the protocol, every replica moves at the same index, and
// a replica that reloads its state keeps the rule.
func TestEngine_DedupRecordsStayBoundedUnderSteadyWrites(t *testing.T) {
	const window = 20 * time.Millisecond
	tn := newTestNet(t, 3, 0, func(c *Config) {
		c.DedupWindow = window
		c.ClusterProtocol = func() int { return DedupRuleProtocol }
	})
	tn.propose(NewProposalID(), 1)
	lead := tn.leader()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok := true
		for name := range tn.net.engines {
			if v, found, _ := tn.dbs[name].State(1).Get(keyDedupRule); !found || len(v) != 1 || v[0] != dedupRuleLatest {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the group did not move to the latest dedup rule")
		}
		tn.propose(NewProposalID(), 1)
		time.Sleep(10 * time.Millisecond)
	}
	const writes = 1200
	for range writes {
		tn.propose(NewProposalID(), 1)
	}
	applied := lead.Applied(1)
	for name, e := range tn.net.engines {
		for e.Applied(1) < applied {
			time.Sleep(5 * time.Millisecond)
		}
		records := tn.dedupRecords(name)
		t.Logf("%s: %d dedup records after %d writes with a %v window", name, records, writes, window)
		if records > writes/4 {
			t.Fatalf("%s keeps %d dedup records after %d writes with a %v window: expired ones are not deleted as fast as they are made", name, records, writes, window)
		}
	}
	c, err := loadDedupCache(tn.dbs["n1"].State(1))
	if err != nil || c.rule != dedupRuleLatest {
		t.Fatalf("reloaded rule %d, %v; want %d", c.rule, err, dedupRuleLatest)
	}
}

// Without the protocol (a node of an older build in the cluster), no group
// moves: every replica keeps expiring by rule 1.
func TestEngine_DedupRuleWaitsForTheProtocol(t *testing.T) {
	tn := newTestNet(t, 3, 0, func(c *Config) { c.ClusterProtocol = func() int { return DedupRuleProtocol - 1 } })
	for range 20 {
		tn.propose(NewProposalID(), 1)
		time.Sleep(5 * time.Millisecond)
	}
	for name := range tn.net.engines {
		if _, found, _ := tn.dbs[name].State(1).Get(keyDedupRule); found {
			t.Fatalf("%s moved to another dedup rule while a node speaks protocol %d", name, DedupRuleProtocol-1)
		}
	}
}

// Under rule 2 an idle group does not keep a burst's expired records: once
// no command applied for a while, its leader sweeps them, on every replica.
func TestEngine_IdleGroupSweepsExpiredDedupRecords(t *testing.T) {
	const window = 20 * time.Millisecond
	tn := newTestNet(t, 3, 0, func(c *Config) {
		c.DedupWindow = window
		c.ClusterProtocol = func() int { return DedupRuleProtocol }
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v, found, _ := tn.dbs["n1"].State(1).Get(keyDedupRule); found && len(v) == 1 && v[0] == dedupRuleLatest {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the group did not move to the latest dedup rule")
		}
		tn.propose(NewProposalID(), 1)
		time.Sleep(10 * time.Millisecond)
	}
	// A burst faster than rule 2's per-command expiry can follow: every
	// record is made before any expired.
	ids := make([][]byte, 300)
	for i := range ids {
		ids[i] = NewProposalID()
	}
	for _, id := range ids {
		tn.propose(id, 1)
	}
	for time.Now().Before(deadline) {
		left := 0
		for name := range tn.net.engines {
			left += tn.dedupRecords(name)
		}
		if left == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for name := range tn.net.engines {
		t.Errorf("%s keeps %d dedup records of an idle group", name, tn.dedupRecords(name))
	}
}

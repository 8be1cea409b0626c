package multiraft

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/state"
)

// dedupRecords counts the dedup records in the state of group 1 on node:
// split ones (rules 1 and 2) and inline ones (rule 3).
func (tn *testNet) dedupRecords(node string) int {
	tn.t.Helper()
	n, err := countDedupRecords(tn.dbs[node].State(1))
	if err != nil {
		tn.t.Fatal(err)
	}
	return n
}

// dedupExpired counts the dedup records of group 1 on node, and those of
// them that expired before the time of the last command it applied.
func (tn *testNet) dedupExpired(node string) (records, expired int) {
	tn.t.Helper()
	st := tn.dbs[node].State(1)
	c, err := loadDedupCache(st)
	if err != nil {
		tn.t.Fatal(err)
	}
	v, found, err := st.Get(keyLastTime)
	if err != nil || !found || len(v) != 8 {
		tn.t.Fatalf("%s: last applied time %x, %v", node, v, err)
	}
	last := int64(binary.BigEndian.Uint64(v))
	for _, r := range c.records {
		if r.expiry < last {
			expired++
		}
	}
	if n := tn.dedupRecords(node); n != len(c.records) {
		tn.t.Fatalf("%s stores %d dedup records, its reloaded cache knows %d", node, n, len(c.records))
	}
	return len(c.records), expired
}

// countDedupRecords counts the dedup records stored in r.
func countDedupRecords(r state.Reader) (int, error) {
	n := 0
	err := r.Scan(prefixDedup, state.PrefixEnd(prefixDedup), func(_, _ []byte) bool {
		n++
		return true
	})
	if err != nil {
		return 0, err
	}
	err = r.Scan(prefixDedupExp, state.PrefixEnd(prefixDedupExp), func(_, v []byte) bool {
		if len(v) > 0 {
			n++
		}
		return true
	})
	return n, err
}

// waitDedupRule proposes to group 1 until every replica stored rule.
func (tn *testNet) waitDedupRule(rule byte) {
	tn.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok := true
		for name := range tn.net.engines {
			if v, found, _ := tn.dbs[name].State(1).Get(keyDedupRule); !found || len(v) != 1 || v[0] != rule {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tn.t.Fatalf("the group did not move to dedup rule %d", rule)
		}
		tn.propose(NewProposalID(), 1)
		time.Sleep(10 * time.Millisecond)
	}
}

// Under steady writes the dedup records stay bounded by the window once the
// group moved to rule 2 or 3: of the records left after 1,200 writes with a
// 20 ms window, at most one command's worth of deletions (64) had expired
// by the last command's time, whatever the write rate. (Under rule 1, half
// a record per entry at most, they pile up: 888 of 1,202 expired.) The
// leader proposes the move itself to the newest rule every node speaks,
// every replica moves at the same index, and a replica that reloads its
// state keeps the rule.
func TestEngine_DedupRecordsStayBoundedUnderSteadyWrites(t *testing.T) {
	const window = 20 * time.Millisecond
	eachEagerRule(t, window, func(t *testing.T, tn *testNet, rule byte) {
		lead := tn.leader()
		const writes = 1200
		for range writes {
			tn.propose(NewProposalID(), 1)
		}
		applied := lead.Applied(1)
		for name, e := range tn.net.engines {
			for e.Applied(1) < applied {
				time.Sleep(5 * time.Millisecond)
			}
			records, expired := tn.dedupExpired(name)
			t.Logf("%s: %d dedup records after %d writes with a %v window, %d of them expired", name, records, writes, window, expired)
			if expired > maxExpiredPerCommand {
				t.Fatalf("%s keeps %d expired dedup records of %d after %d writes with a %v window: expired ones are not deleted as fast as they are made", name, expired, records, writes, window)
			}
		}
		c, err := loadDedupCache(tn.dbs["n1"].State(1))
		if err != nil || c.rule != rule {
			t.Fatalf("reloaded rule %d, %v; want %d", c.rule, err, rule)
		}
	})
}

// eachEagerRule runs test once per dedup rule from 2 on, each on a fresh
// three-engine net with the dedup window given whose group moved to it.
func eachEagerRule(t *testing.T, window time.Duration, test func(t *testing.T, tn *testNet, rule byte)) {
	for _, protocol := range []int{DedupRuleProtocol, DedupInlineProtocol} {
		t.Run(fmt.Sprintf("protocol=%d", protocol), func(t *testing.T) {
			tn := newTestNet(t, 3, 0, func(c *Config) {
				c.DedupWindow = window
				c.ClusterProtocol = func() int { return protocol }
			})
			rule := dedupRuleFor(protocol)
			tn.waitDedupRule(rule)
			test(t, tn, rule)
		})
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

// From rule 2 on an idle group does not keep a burst's expired records:
// once no command applied for a while, its leader sweeps them, on every
// replica.
func TestEngine_IdleGroupSweepsExpiredDedupRecords(t *testing.T) {
	eachEagerRule(t, 20*time.Millisecond, func(t *testing.T, tn *testNet, _ byte) {
		// A burst faster than the per-command expiry can follow: every
		// record is made before any expired.
		ids := make([][]byte, 300)
		for i := range ids {
			ids[i] = NewProposalID()
		}
		for _, id := range ids {
			tn.propose(id, 1)
		}
		deadline := time.Now().Add(10 * time.Second)
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
	})
}

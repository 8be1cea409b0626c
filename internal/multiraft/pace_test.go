package multiraft

import (
	"sync"
	"testing"
	"time"
)

// The loop pauses between rounds only while several of the node's own
// proposals wait: a lone caller never waits for it, and under concurrent
// callers the leader pauses, every proposal still applied exactly once.
func TestEngine_RoundPauseOnlyUnderLoad(t *testing.T) {
	tn := newTestNet(t, 3, 0, func(c *Config) { c.RoundPause = 2 * time.Millisecond })
	tn.propose(NewProposalID(), 1) // elect and settle
	leader := tn.leader()
	before := leader.Stats().RoundPauses.Load()
	total := uint64(1)
	for range 30 {
		total = tn.propose(NewProposalID(), 1)
	}
	if tn.leader() != leader {
		t.Skip("leadership moved during the run")
	}
	if n := leader.Stats().RoundPauses.Load() - before; n != 0 {
		t.Fatalf("one caller at a time: the leader paused %d times, want never", n)
	}

	const callers, each = 16, 20
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range each {
				tn.propose(NewProposalID(), 1)
			}
		})
	}
	wg.Wait()
	want := total + callers*each
	if got := tn.propose(NewProposalID(), 0); got != want {
		t.Fatalf("total %d after %d concurrent proposals, want %d", got, callers*each, want)
	}
	if n := leader.Stats().RoundPauses.Load() - before; n == 0 && tn.leader() == leader {
		t.Fatalf("%d concurrent callers: the leader never paused between rounds", callers)
	}
}

// RoundPause zero takes the default; negative stays off.
func TestConfig_RoundPauseDefaults(t *testing.T) {
	if e := newTestNet(t, 1, 0).leader(); e.cfg.RoundPause != DefaultRoundPause {
		t.Fatalf("RoundPause %v, want the default %v", e.cfg.RoundPause, DefaultRoundPause)
	}
	if e := newTestNet(t, 1, 0, func(c *Config) { c.RoundPause = -1 }).leader(); e.cfg.RoundPause >= 0 {
		t.Fatalf("RoundPause -1 became %v, want it left off", e.cfg.RoundPause)
	}
}

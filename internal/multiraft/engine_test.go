package multiraft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// The driver follows the Ready contract: a follower acknowledges appended
// entries, and grants votes, only after an fsync that followed their
// arrival; a leader sends its appends before its own fsync (its append runs
// in parallel with replication).
func TestEngine_OrderingOfSyncsAndSends(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	for i := 0; i < 30; i++ {
		tn.propose(NewProposalID(), 1)
	}
	events := tn.net.rec.snapshot()

	type arrival struct {
		term uint64
		at   int
	}
	lastSync := map[string]int{}               // node -> index of its last sync
	arrived := map[string]map[uint64]arrival{} // node -> entry index -> first arrival of that entry
	lastVote := map[string]map[uint64]int{}    // node -> from -> index of last MsgVote received
	leaderSentBeforeSync, checkedResps := 0, 0
	pendingLeaderApp := map[string]bool{} // leader sent an append not yet followed by its own sync
	for i, ev := range events {
		switch ev.kind {
		case "sync":
			lastSync[ev.node] = i
			if pendingLeaderApp[ev.node] {
				leaderSentBeforeSync++
				delete(pendingLeaderApp, ev.node)
			}
		case "recv":
			m := ev.msg
			if m.Type == raftpb.MsgApp {
				if arrived[ev.node] == nil {
					arrived[ev.node] = map[uint64]arrival{}
				}
				for _, en := range m.Entries {
					if a, ok := arrived[ev.node][en.Index]; !ok || a.term != en.Term {
						arrived[ev.node][en.Index] = arrival{term: en.Term, at: i}
					}
				}
			}
			if m.Type == raftpb.MsgVote {
				if lastVote[ev.node] == nil {
					lastVote[ev.node] = map[uint64]int{}
				}
				lastVote[ev.node][m.From] = i
			}
		case "send":
			m := ev.msg
			switch {
			case m.Type == raftpb.MsgApp && len(m.Entries) > 0:
				pendingLeaderApp[ev.node] = true
			case m.Type == raftpb.MsgAppResp && !m.Reject:
				// Acknowledging index i claims entries up to i are durable:
				// a sync must have followed the arrival of entry i.
				if a, ok := arrived[ev.node][m.Index]; ok {
					checkedResps++
					if lastSync[ev.node] < a.at {
						t.Fatalf("event %d: %s acknowledged entry %d before syncing it (arrived at %d, last sync %d)",
							i, ev.node, m.Index, a.at, lastSync[ev.node])
					}
				}
			case m.Type == raftpb.MsgVoteResp && !m.Reject:
				if at, ok := lastVote[ev.node][m.To]; ok && lastSync[ev.node] < at {
					t.Fatalf("event %d: %s granted a vote before syncing it", i, ev.node)
				}
			}
		}
	}
	if checkedResps == 0 {
		t.Fatal("no follower acknowledgement was observed")
	}
	if leaderSentBeforeSync == 0 {
		t.Fatal("the leader never sent an append before its own sync")
	}
}

// A proposal id applies once, however often it is proposed.
func TestEngine_ProposalIDAppliesOnce(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	id := NewProposalID()
	first := tn.propose(id, 5)
	again := tn.propose(id, 5)
	if first != 5 || again != 5 {
		t.Fatalf("results %d and %d, want 5 twice", first, again)
	}
	if n := tn.propose(NewProposalID(), 1); n != 6 {
		t.Fatalf("next total %d, want 6 (the duplicate must not have applied)", n)
	}
}

// Proposing on a follower says who leads instead of hanging.
func TestEngine_ProposeOnFollowerNamesLeader(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	lead := tn.leader()
	var leaderReplica uint64
	for _, e := range tn.net.engines {
		if e == lead {
			leaderReplica, _ = e.Leader(1)
		}
	}
	for _, e := range tn.net.engines {
		if e == lead {
			continue
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, err := e.Propose(context.Background(), 1, NewProposalID(), []byte{1})
			var nl *NotLeaderError
			if !errors.As(err, &nl) {
				t.Fatalf("propose on follower: %v, want NotLeaderError", err)
			}
			if nl.Leader == leaderReplica || time.Now().After(deadline) {
				if nl.Leader != leaderReplica {
					t.Fatalf("follower names leader %d, want %d", nl.Leader, leaderReplica)
				}
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// A read on any replica after a write completes sees the write.
func TestEngine_ReadIndexSeesCompletedWrites(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	total := tn.propose(NewProposalID(), 7)
	for name, e := range tn.net.engines {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := e.ReadIndex(ctx, 1); err != nil {
			t.Fatalf("%s: read index: %v", name, err)
		}
		cancel()
		v, _, err := tn.dbs[name].State(1).Get([]byte("n"))
		if err != nil || binary.BigEndian.Uint64(v) != total {
			t.Fatalf("%s: read %v (%v) after write of %d", name, v, err, total)
		}
	}
}

// Every replica of a group reads at the same time, round after round: each
// read is confirmed, none waits for a re-send. The leader keeps one pending
// ReadIndex per request context; contexts that were a bare per-node counter
// met across nodes (here at once: every counter starts at 1), and the
// leader dropped all but one of the requests with the same context, so
// their callers waited for ReadRetry (set out of reach here) to send again.
func TestEngine_ConcurrentReadIndexOnEveryReplica(t *testing.T) {
	tn := newTestNet(t, 3, 0, func(c *Config) { c.ReadRetry = time.Hour })
	tn.propose(NewProposalID(), 1)
	for round := 0; round < 20; round++ {
		var wg sync.WaitGroup
		errc := make(chan error, len(tn.net.engines))
		for name, e := range tn.net.engines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := e.ReadIndex(ctx, 1); err != nil {
					errc <- fmt.Errorf("round %d, %s: %w", round, name, err)
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
	}
}

// A read sent to a leader that is then cut off completes once the others
// elect a new one: the round is sent again to the new leader when the
// replica learns of it, not after ReadRetry (set out of reach here). Before,
// every read in flight across a leadership change, a balancer's transfer
// included, waited a whole ReadRetry (1 s).
func TestEngine_ReadIndexFollowsANewLeader(t *testing.T) {
	tn := newTestNet(t, 3, 0, func(c *Config) { c.ReadRetry = time.Hour })
	tn.propose(NewProposalID(), 1)
	old := tn.leader()
	var oldName, reader string
	for name, e := range tn.net.engines {
		if e == old {
			oldName = name
		} else {
			reader = name
		}
	}
	tn.net.mu.Lock()
	tn.net.down[oldName] = true
	tn.net.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := tn.net.engines[reader].ReadIndex(ctx, 1); err != nil {
		t.Fatalf("%s: read sent while %s led and was cut off: %v", reader, oldName, err)
	}
	if l, _ := tn.net.engines[reader].Leader(1); l == 0 || l == old.group(1).replica {
		t.Fatalf("%s confirmed a read with leader %d, the cut-off one or none", reader, l)
	}
}

// A ReadIndex request lost on the way to the leader (the message dropped
// once, the leader unchanged) is sent again after ReadRetry with a fresh
// context, and the read completes: nothing else would ever answer it.
func TestEngine_LostReadIndexIsSentAgain(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	tn.propose(NewProposalID(), 1)
	reader := tn.follower()
	var dropped atomic.Int32
	tn.net.mu.Lock()
	tn.net.filter = func(from, _ string, m *raftpb.Message) bool {
		return !(from == reader && m.Type == raftpb.MsgReadIndex && dropped.CompareAndSwap(0, 1))
	}
	tn.net.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tn.net.engines[reader].ReadIndex(ctx, 1); err != nil {
		t.Fatalf("%s: read whose first request was dropped: %v", reader, err)
	}
	if dropped.Load() != 1 {
		t.Fatal("the read went through without its request being dropped: the test tested nothing")
	}
}

// A replica cut off from the others cannot confirm a read index: it fails
// when its context ends rather than serving possibly old state.
func TestEngine_ReadIndexWithoutQuorumFails(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	tn.propose(NewProposalID(), 1)
	tn.net.mu.Lock()
	tn.net.down["n1"] = true
	tn.net.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := tn.net.engines["n1"].ReadIndex(ctx, 1); err == nil {
		t.Fatal("isolated replica confirmed a read index")
	}
}

// A replica that fell behind a compacted log catches up by snapshot.
func TestEngine_LaggingReplicaCatchesUpBySnapshot(t *testing.T) {
	tn := newTestNet(t, 3, 10)
	victim := tn.follower()
	total := tn.writeWhileDown(victim, 60)
	e := tn.net.engines[victim]
	deadline := time.Now().Add(10 * time.Second)
	for e.Applied(1) < total && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.ReadIndex(ctx, 1); err != nil {
		t.Fatal(err)
	}
	v, _, _ := tn.dbs[victim].State(1).Get([]byte("n"))
	if len(v) != 8 || binary.BigEndian.Uint64(v) != total {
		t.Fatalf("lagging replica has %v, want total %d", v, total)
	}
	if first, _ := tn.dbs[victim].Group(1); first == nil {
		t.Fatal("no group storage")
	}
}

// Every proposal a leader answers reports where its time went: the phases
// follow one another, so they add up to the whole, and the leader's append
// (an fsync) is never free.
func TestEngine_ProposalPhases(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	answered := 0
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// A fresh id and one attempt: the answer comes from this proposal's
		// own entry (a retry may be answered by an earlier attempt's entry,
		// and reports nothing when its own was not appended yet).
		if _, err := tn.leader().Propose(ctx, 1, NewProposalID(), []byte{1}); err == nil {
			answered++
		}
		cancel()
	}
	tn.phaseMu.Lock()
	defer tn.phaseMu.Unlock()
	if answered == 0 || len(tn.phases) < answered {
		t.Fatalf("%d proposals answered, %d reported their phases", answered, len(tn.phases))
	}
	for i, pt := range tn.phases {
		sum := pt.Queue + pt.Append + pt.Quorum + pt.Apply + pt.Answer
		if sum != pt.Total || pt.Append <= 0 {
			t.Errorf("proposal %d: phases %+v: sum %v, total %v", i, pt, sum, pt.Total)
		}
	}
}

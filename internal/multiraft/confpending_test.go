package multiraft

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/errs"
)

func addLearner(id uint64) raftpb.ConfChangeV2 {
	return raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddLearnerNode, NodeID: id}}}
}

// A membership change proposed while an earlier one is not applied yet is
// one Raft would turn into an empty entry without a word: the engine
// refuses it at once, rather than leaving its caller waiting until its
// deadline for a change that can never apply. The earlier one's caller
// hears the end as soon as its leader steps down, not at its deadline.
func TestEngine_ConfChangeWhileOneIsPendingIsRefusedAtOnce(t *testing.T) {
	tn := newTestNet(t, 3, 0, func(c *Config) { c.TickInterval = 20 * time.Millisecond })
	tn.propose([]byte("before"), 1)
	lead := tn.leader()
	leadName := tn.nameOf(lead)
	tn.net.mu.Lock()
	for name := range tn.net.engines {
		if name != leadName {
			tn.net.down[name] = true // the first change cannot commit
		}
	}
	tn.net.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := make(chan error, 1)
	go func() { first <- lead.ProposeConfChange(ctx, 1, addLearner(4)) }()
	time.Sleep(50 * time.Millisecond) // the loop has taken the first by now
	select {
	case e := <-first:
		t.Fatalf("the first change ended (%v) while its followers were away", e)
	default:
	}
	err := lead.ProposeConfChange(ctx, 1, addLearner(5))
	if _, notLeader := errors.AsType[*NotLeaderError](err); !errors.Is(err, ErrConfChangePending) && !notLeader {
		t.Fatalf("a second change while the first is pending: %v, want ErrConfChangePending", err)
	}
	// Cut off from its followers, the leader steps down (check quorum):
	// the first change's caller is told then, well before its deadline.
	select {
	case err := <-first:
		if _, ok := errors.AsType[*NotLeaderError](err); !ok {
			t.Fatalf("the first change, its leader gone: %v, want a NotLeaderError", err)
		}
		if errs.CodeOf(err) == errs.Timeout || ctx.Err() != nil {
			t.Fatalf("the first change ended by its deadline: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the first change's caller still waits after its leader stepped down")
	}

	tn.net.mu.Lock()
	clear(tn.net.down)
	tn.net.mu.Unlock()
	// The group takes changes again once a leader has applied its term's
	// first entry: retried as the node's reconciler does.
	for {
		err := tn.leader().ProposeConfChange(ctx, 1, addLearner(5))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no change applied after the followers came back: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	st, ok, err := tn.leader().GroupStatus(ctx, 1)
	if err != nil || !ok {
		t.Fatalf("status: %v %v", ok, err)
	}
	found := false
	for _, id := range st.ConfState.Learners {
		found = found || id == 5
	}
	if !found {
		t.Fatalf("learners %v after the change, want 5 among them", st.ConfState.Learners)
	}
}

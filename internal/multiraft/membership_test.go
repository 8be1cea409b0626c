package multiraft

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// oneEntryPerAppend makes leaders send one entry per append message, so a
// replica catching up applies the log a prefix at a time.
func oneEntryPerAppend(c *Config) { c.MaxSizePerMsg = 1 }

// proposeConfChange proposes cc to group 1 through the current leader,
// retrying across elections.
func (tn *testNet) proposeConfChange(ctx context.Context, cc raftpb.ConfChangeSingle) {
	tn.t.Helper()
	for {
		err := tn.leader().ProposeConfChange(ctx, 1, raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{cc}})
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			tn.t.Fatalf("conf change %v: %v", cc, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// removals records the groups an engine's OnConfChange reports this node's
// replica removed from.
type removals struct{ syncList[uint64] }

func (r *removals) onConfChange(group, _ uint64, removedSelf bool) {
	if removedSelf {
		r.add(group)
	}
}

// A replica added to a young group catches up from the leader's log, not a
// snapshot: it applies the group's earlier membership changes, made before it
// was added, and none of them removes it. (Counted as removed, the node
// deleted the replica while the leader still counted what it had
// acknowledged.) Removing it later does count.
func TestEngine_ReplicaCatchingUpFromLogIsNotRemoved(t *testing.T) {
	tn := newTestNet(t, 3, 0, oneEntryPerAppend) // no compaction: the log starts at index 1
	for i := 0; i < 5; i++ {
		tn.propose(NewProposalID(), 1)
	}
	var rm removals
	n4 := tn.addEngine(4, 0, nil, oneEntryPerAppend, func(c *Config) { c.OnConfChange = rm.onConfChange })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tn.proposeConfChange(ctx, raftpb.ConfChangeSingle{Type: raftpb.ConfChangeAddLearnerNode, NodeID: 4})
	total := tn.propose(NewProposalID(), 1)
	want := tn.leader().Applied(1)
	for n4.Applied(1) < want && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	if got := n4.Applied(1); got < want {
		t.Fatalf("the new replica applied %d, want %d", got, want)
	}
	if got := rm.snapshot(); len(got) > 0 {
		t.Fatalf("the new replica was reported removed from groups %v while catching up", got)
	}
	if v, _, _ := tn.dbs["n4"].State(1).Get([]byte("n")); len(v) != 8 || v[7] != byte(total) {
		t.Fatalf("the new replica holds %v, want total %d", v, total)
	}

	tn.proposeConfChange(ctx, raftpb.ConfChangeSingle{Type: raftpb.ConfChangeRemoveNode, NodeID: 4})
	for len(rm.snapshot()) == 0 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	if got := rm.snapshot(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("after its removal the replica was reported removed from %v, want [1]", got)
	}
}

// A replica destroyed on a follower while the leader still counts what it
// acknowledged never comes back empty under the same id: the leader's next
// heartbeat would carry a commit index beyond its empty log, and Raft panics
// on that ("tocommit(10) is out of range [lastIndex(0)]").
func TestEngine_DestroyedReplicaIsNotRecreated(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	for i := 0; i < 5; i++ {
		tn.propose(NewProposalID(), 1)
	}
	lead := tn.leader()
	var victim *Engine
	var replica uint64
	for i, name := range []string{"n1", "n2", "n3"} {
		if e := tn.net.engines[name]; e != lead {
			victim, replica = e, uint64(i+1)
			break
		}
	}
	want := lead.Applied(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for victim.Applied(1) < want && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	if err := victim.CloseGroup(ctx, 1, replica+1, true); err != nil || !victim.HasGroup(1) {
		t.Fatalf("closing another replica id: err %v, still open %v; want it left alone", err, victim.HasGroup(1))
	}
	if err := victim.CloseGroup(ctx, 1, replica, true); err != nil {
		t.Fatal(err)
	}
	// Heartbeats go out every tick (5 ms): give the leader many.
	for range 20 {
		tn.propose(NewProposalID(), 1)
	}
	time.Sleep(200 * time.Millisecond)
	if err := victim.Err(); err != nil {
		t.Fatalf("the engine failed after its replica was destroyed: %v", err)
	}
	if victim.HasGroup(1) {
		t.Fatal("the destroyed replica was opened again")
	}
	if err := victim.OpenGroup(ctx, 1, replica, nil); !errors.Is(err, ErrReplicaRemoved) {
		t.Fatalf("opening the destroyed replica again: %v, want ErrReplicaRemoved", err)
	}
	if err := victim.OpenGroup(ctx, 1, replica+10, nil); err != nil {
		t.Fatalf("opening a newer replica of the group: %v", err)
	}
}

// Two learners promoted in one change (as the reconciler promotes learners
// that caught up together) take a group from one voter to three through a
// joint configuration that Raft leaves by itself, never through two voters:
// afterwards the group commits with either new voter cut off.
func TestEngine_TwoLearnersPromotedTogether(t *testing.T) {
	tn := newTestNet(t, 1, 0)
	tn.propose(NewProposalID(), 1)
	n2 := tn.addEngine(2, 0, nil)
	n3 := tn.addEngine(3, 0, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tn.proposeConfChange(ctx, raftpb.ConfChangeSingle{Type: raftpb.ConfChangeAddLearnerNode, NodeID: 2})
	tn.proposeConfChange(ctx, raftpb.ConfChangeSingle{Type: raftpb.ConfChangeAddLearnerNode, NodeID: 3})
	tn.propose(NewProposalID(), 1)
	applied := tn.leader().Applied(1)
	for (n2.Applied(1) < applied || n3.Applied(1) < applied) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	both := raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{
		{Type: raftpb.ConfChangeAddNode, NodeID: 2}, {Type: raftpb.ConfChangeAddNode, NodeID: 3},
	}}
	if err := tn.leader().ProposeConfChange(ctx, 1, both); err != nil {
		t.Fatal(err)
	}
	var cs raftpb.ConfState
	for ctx.Err() == nil {
		sts, err := tn.leader().Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cs = sts[0].ConfState; len(cs.Voters) == 3 && len(cs.VotersOutgoing) == 0 && len(cs.Learners) == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(cs.Voters) != 3 || len(cs.VotersOutgoing) != 0 {
		t.Fatalf("membership after promoting both learners: %+v, want voters 1, 2, 3 and the joint configuration left", cs)
	}
	for _, cut := range []string{"n2", "n3"} {
		tn.net.mu.Lock()
		tn.net.down = map[string]bool{cut: true}
		tn.net.mu.Unlock()
		if _, err := tn.proposeAt(NewProposalID(), 1); err != nil {
			t.Fatalf("write with %s cut off: %v", cut, err)
		}
	}
}

package multiraft

import (
	"context"
	"testing"
	"time"

	raftpb "go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/transport"
)

// A heartbeat whose commit index is beyond the last entry a follower holds
// shows that the follower lost entries it had acknowledged. The engine
// drops it (raft panics on it: "tocommit is out of range"), reports it once
// through OnLostLog, and keeps running; the group goes on committing.
func TestEngine_LostLogIsReportedNotPanicked(t *testing.T) {
	type report struct{ group, replica, last, commit uint64 }
	lost := make(chan report, 4)
	tn := newTestNet(t, 3, 0, func(c *Config) {
		c.OnLostLog = func(g, r, last, commit uint64) { lost <- report{g, r, last, commit} }
	})
	tn.propose([]byte("a"), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ls, _, err := tn.leader().GroupStatus(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	name := tn.follower()
	tn.net.mu.Lock()
	f := tn.net.engines[name]
	tn.net.mu.Unlock()
	fg := f.group(1)
	last, err := fg.st.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	hb := raftpb.Message{Type: raftpb.MsgHeartbeat, From: ls.Replica, To: fg.replica, Term: ls.Term, Commit: last + 5}
	f.Step([]transport.GroupMessage{{Group: 1, Msg: hb}, {Group: 1, Msg: hb}})
	select {
	case r := <-lost:
		// The follower's log may have grown since last was read (an
		// append still on its way), never up to the heartbeat's commit.
		if r.group != 1 || r.replica != fg.replica || r.commit != last+5 || r.last < last || r.last >= r.commit {
			t.Fatalf("reported %+v, want group 1, replica %d, last from %d below commit %d", r, fg.replica, last, last+5)
		}
	case <-ctx.Done():
		t.Fatal("the heartbeat past the follower's log was not reported")
	}
	if got := tn.propose([]byte("b"), 1); got != 2 {
		t.Fatalf("total after the report %d, want 2", got)
	}
	if err := f.Err(); err != nil {
		t.Fatalf("the follower's loop stopped: %v", err)
	}
	if len(lost) != 0 {
		t.Fatalf("reported %d more times, want once", len(lost))
	}
}

package multiraft

import (
	"context"
	"testing"
	"time"

	raftpb "go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/poll"
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
	// The follower holds the leader's whole log (no append still on its
	// way), so the last index it reports is the one read here.
	var last uint64
	poll.Until(t, 5*time.Second, "the follower holds the leader's log", func() bool {
		want, err1 := tn.leader().group(1).st.LastIndex()
		got, err2 := fg.st.LastIndex()
		last = got
		return err1 == nil && err2 == nil && got == want
	})
	hb := raftpb.Message{Type: raftpb.MsgHeartbeat, From: ls.Replica, To: fg.replica, Term: ls.Term, Commit: last + 5}
	f.Step([]transport.GroupMessage{{Group: 1, Msg: hb}, {Group: 1, Msg: hb}})
	select {
	case r := <-lost:
		if r != (report{1, fg.replica, last, last + 5}) {
			t.Fatalf("reported %+v, want group 1, replica %d, last %d, commit %d", r, fg.replica, last, last+5)
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

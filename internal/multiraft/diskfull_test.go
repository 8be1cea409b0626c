package multiraft

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	raftpb "go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/poll"
)

func TestDropForDisk(t *testing.T) {
	cmd := raftpb.Entry{Type: raftpb.EntryNormal, Data: []byte("put")}
	empty := raftpb.Entry{Type: raftpb.EntryNormal}
	conf := raftpb.Entry{Type: raftpb.EntryConfChangeV2, Data: []byte("cc")}
	for _, c := range []struct {
		name string
		m    raftpb.Message
		low  bool
		want bool
	}{
		{"commands, disk low", raftpb.Message{Type: raftpb.MsgApp, Entries: []raftpb.Entry{empty, cmd}}, true, true},
		{"commands, room left", raftpb.Message{Type: raftpb.MsgApp, Entries: []raftpb.Entry{cmd}}, false, false},
		{"a new leader's empty entry", raftpb.Message{Type: raftpb.MsgApp, Entries: []raftpb.Entry{empty}}, true, false},
		{"a membership change", raftpb.Message{Type: raftpb.MsgApp, Entries: []raftpb.Entry{conf}}, true, false},
		{"no entries", raftpb.Message{Type: raftpb.MsgApp}, true, false},
		{"heartbeat", raftpb.Message{Type: raftpb.MsgHeartbeat}, true, false},
		{"vote", raftpb.Message{Type: raftpb.MsgVote}, true, false},
		{"a transfer's timeout, disk low", raftpb.Message{Type: raftpb.MsgTimeoutNow}, true, true},
		{"a transfer's timeout, room left", raftpb.Message{Type: raftpb.MsgTimeoutNow}, false, false},
	} {
		if got := dropForDisk(c.m, func() bool { return c.low }); got != c.want {
			t.Errorf("%s: dropForDisk = %v, want %v", c.name, got, c.want)
		}
	}
}

// A leader whose disk fills while a leadership transfer is already running
// (the planner's balancing, say) tells a write to look for the next leader,
// as it does while it hands the group over itself; it does not refuse it
// with 507, since the group can take it a moment later. (A cluster test,
// TestDiskFull_WriteRightAfterTheDiskFillsGoesToTheNextLeader, met that
// 507 in CI.)
func TestEngine_DiskFillsWhileATransferRuns(t *testing.T) {
	// A slow tick keeps the transfer to an unreachable replica running for
	// a whole election timeout (500 ms).
	tn := newTestNet(t, 3, 0, func(c *Config) { c.TickInterval = 50 * time.Millisecond })
	tn.propose([]byte("before"), 1)
	lead := tn.leader()
	leadName, away := tn.nameOf(lead), tn.follower()
	tn.net.mu.Lock()
	awayID := tn.net.engines[away].group(1).replica
	tn.net.down[away] = true
	tn.net.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := lead.TransferLeader(ctx, 1, awayID); err != nil {
		t.Fatal(err)
	}
	tn.fss[leadName].TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1, TotalBytes: 1 << 30})
	poll.Until(t, 5*time.Second, "the leader sees its disk full", func() bool {
		return lead.cfg.DB.CheckSpace() != nil
	})
	_, err := lead.Propose(ctx, 1, []byte("while full"), []byte{1})
	if _, ok := errors.AsType[*NotLeaderError](err); !ok {
		t.Fatalf("a write while the leader's disk is full and a transfer runs: %v, want a NotLeaderError", err)
	}
	tn.net.mu.Lock()
	tn.net.down[away] = false
	tn.net.mu.Unlock()
	if got := tn.propose([]byte("while full"), 1); got != 2 {
		t.Fatalf("the write at the next leader made the total %d, want 2", got)
	}
}

// A leader whose disk fills hands its group to a replica whose disk is
// slow when no replica's disk is fine: a slow disk still takes writes, and
// the write lands there. With every other disk full too, the write is
// refused with 507 and the leader keeps the group.
func TestEngine_FullDiskHandsOverToASlowOneRatherThanRefuse(t *testing.T) {
	for _, tc := range []struct {
		peers PeerDisk
		moves bool
	}{{PeerDiskSlow, true}, {PeerDiskUnfit, false}} {
		tn := newTestNet(t, 3, 0, func(c *Config) {
			c.PeerDisk = func(uint64, uint64) PeerDisk { return tc.peers }
		})
		tn.propose([]byte("before"), 1)
		lead := tn.leader()
		tn.fss[tn.nameOf(lead)].TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1, TotalBytes: 1 << 30})
		poll.Until(t, 5*time.Second, "the leader sees its disk full", func() bool {
			return lead.cfg.DB.CheckSpace() != nil
		})
		total, err := tn.proposeAt([]byte("while full"), 1)
		switch {
		case tc.moves && (err != nil || total != 2):
			t.Fatalf("peers' disks %d: a write while the leader's disk is full = %d, %v; want it taken by a slow replica", tc.peers, total, err)
		case tc.moves:
			poll.Until(t, 5*time.Second, "the full leader steps down", func() bool {
				_, local := lead.Leader(1)
				return !local
			})
		case !errs.Is(err, errs.InsufficientStorage):
			t.Fatalf("peers' disks %d: a write while every disk is unfit = %d, %v; want 507", tc.peers, total, err)
		}
	}
}

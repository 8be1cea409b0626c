package multiraft

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
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
// refused with 507 and the leader keeps the group. (The peers' disks are
// reported only after the first write: a leader sends replicas it is told
// are full no commands, so that write would never commit.)
func TestEngine_FullDiskHandsOverToASlowOneRatherThanRefuse(t *testing.T) {
	for _, tc := range []struct {
		peers PeerDisk
		moves bool
	}{{PeerDiskSlow, true}, {PeerDiskFull, false}, {PeerDiskUnfit, false}} {
		var reported atomic.Bool
		tn := newTestNet(t, 3, 0, func(c *Config) {
			c.PeerDisk = func(uint64, uint64) PeerDisk {
				if !reported.Load() {
					return PeerDiskFine
				}
				return tc.peers
			}
		})
		tn.propose([]byte("before"), 1)
		reported.Store(true)
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

// A leader sends a replica on a node whose disk is full (as gossip tells
// it: Config.PeerDisk) its appends without their commands, which that
// replica would drop, while the group commits with the other follower;
// once its disk is reported fine again, the replica catches up.
func TestEngine_AppendsToAFullPeerCarryNoCommands(t *testing.T) {
	var fullPeer atomic.Uint64 // the replica reported full; 0: none
	tn := newTestNet(t, 3, 0, reportFull(&fullPeer))
	tn.propose([]byte("before"), 1)
	lead := tn.leader()
	leadName, full := tn.nameOf(lead), tn.follower()
	fullID, _ := strconv.ParseUint(strings.TrimPrefix(full, "n"), 10, 64)
	var commandBytes atomic.Int64
	tn.net.mu.Lock()
	tn.net.filter = func(from, to string, m *raftpb.Message) bool {
		if from == leadName && to == full && carriesCommands(*m) {
			commandBytes.Add(int64(m.Size()))
		}
		return true
	}
	tn.net.mu.Unlock()
	fullPeer.Store(fullID)
	n := 0
	poll.Until(t, 5*time.Second, "the leader strips an append to the full peer", func() bool {
		n++
		tn.propose(fmt.Appendf(nil, "settle-%d", n), 1)
		return lead.stats.FullPeerStrips.Load() > 0
	})
	commandBytes.Store(0)
	for i := range 50 {
		tn.propose(fmt.Appendf(nil, "while full %d", i), 1)
	}
	if b := commandBytes.Load(); b != 0 {
		t.Fatalf("the leader sent %d bytes of appends carrying commands to a replica whose disk is full", b)
	}
	fullPeer.Store(0)
	tn.propose([]byte("after"), 1)
	ctx := context.Background()
	poll.Until(t, 10*time.Second, "the replica catches up", func() bool {
		ls, _, err1 := lead.GroupStatus(ctx, 1)
		fs, _, err2 := tn.net.engines[full].GroupStatus(ctx, 1)
		return err1 == nil && err2 == nil && fs.Applied == ls.Applied && ls.Applied > 0
	})
}

// A leader sends no snapshot to a replica on a node whose disk is full: it
// would refuse it, and the leader would dial it and read the group's state
// again every heartbeat. Once its disk is reported fine, the replica gets
// its snapshot and catches up.
func TestEngine_NoSnapshotToAFullPeer(t *testing.T) {
	var fullPeer atomic.Uint64 // the replica reported full; 0: none
	tn := newTestNet(t, 3, 10, reportFull(&fullPeer))
	victim := tn.follower()
	victimID, _ := strconv.ParseUint(strings.TrimPrefix(victim, "n"), 10, 64)
	tn.net.mu.Lock()
	tn.net.down[victim] = true
	tn.net.mu.Unlock()
	for range 60 { // past the compaction threshold (10): only a snapshot catches it up
		tn.propose(NewProposalID(), 1)
	}
	fullPeer.Store(victimID)
	lead := tn.leader()
	strips := lead.stats.FullPeerStrips.Load()
	tn.net.mu.Lock()
	tn.net.down[victim] = false
	tn.net.mu.Unlock()
	poll.Until(t, 5*time.Second, "the leader passes over a snapshot to the full replica", func() bool {
		return lead.stats.FullPeerStrips.Load() >= strips+3
	})
	if sent := tn.snapshotsSentTo(victim); sent != 0 {
		t.Fatalf("%d snapshots sent to a replica whose disk is full", sent)
	}
	fullPeer.Store(0)
	e := tn.net.engines[victim]
	poll.Until(t, 10*time.Second, "the replica catches up by snapshot", func() bool { return e.Applied(1) >= lead.Applied(1) })
}

// reportFull has Config.PeerDisk report the disk of the replica fullPeer
// names (0: none) full, and every other one fine.
func reportFull(fullPeer *atomic.Uint64) func(*Config) {
	return func(c *Config) {
		c.PeerDisk = func(_, replica uint64) PeerDisk {
			if replica == fullPeer.Load() {
				return PeerDiskFull
			}
			return PeerDiskFine
		}
	}
}

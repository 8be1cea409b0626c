package multiraft

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/transport"
)

// Sender carries Raft traffic to other nodes. *transport.Transport
// implements it.
type Sender interface {
	// SendRaft queues messages for the node at addr without blocking.
	SendRaft(addr string, msgs []transport.GroupMessage)
	// SendSnapshot streams one MsgSnap with its data and returns when the
	// receiver has accepted or refused it.
	SendSnapshot(ctx context.Context, addr string, msg transport.GroupMessage, data func(w io.Writer) error) error
}

// Directory resolves a replica id to the internal address of the node that
// holds it. The node layer answers from the cluster map.
type Directory interface {
	AddrOf(replica uint64) (addr string, ok bool)
}

// Config configures an Engine. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// DB is the node's one store for all Raft logs and partition state.
	DB *storage.DB
	// Sender carries Raft messages and snapshots to other nodes.
	Sender Sender
	// Directory maps replica ids to node addresses.
	Directory Directory
	// Applier returns the state machine of a group; it is called once per
	// group when the group is opened.
	Applier func(group uint64) state.Applier
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger

	// TickInterval is the length of one Raft tick.
	TickInterval time.Duration
	// ElectionTicks is the election timeout in ticks (randomised by Raft
	// between 1x and 2x).
	ElectionTicks int
	// HeartbeatTicks is the leader's heartbeat interval in ticks.
	HeartbeatTicks int
	// DedupWindow is how long proposal ids and client idempotency keys are
	// remembered.
	DedupWindow time.Duration
	// Now is the time a proposal is stamped with, which decides every
	// expiry in the replicated state (dedup records, leases): the node's
	// clock.Clock, which does not follow wall-clock jumps. Nil: time.Now.
	Now func() time.Time
	// ProposalAttempt bounds one attempt of a local proposal; after it the
	// caller retries with the same id.
	ProposalAttempt time.Duration
	// ReadRetry is how long a ReadIndex request may wait for an answer before
	// it is sent again with a fresh request context: half the election
	// timeout by default, as etcd re-sends after 500 ms of its 1 s. A
	// request lost on the way (a dropped connection, a leader that stepped
	// down without this replica hearing of it) costs the reads behind it
	// that long.
	ReadRetry time.Duration
	// CompactionThreshold bounds a group's log: a leader keeps at most this
	// many applied entries for a replica that lags, and every replica keeps
	// a tenth of it behind its applied index (logkeep.go).
	CompactionThreshold uint64
	// MaxSizePerMsg limits the bytes of one append message.
	MaxSizePerMsg uint64
	// MaxInflightMsgs limits append messages in flight per follower.
	MaxInflightMsgs int
	// MaxInflightBytes limits the entry bytes of the append messages in
	// flight to one follower of one group (at least MaxSizePerMsg): what a
	// leader holds queued for a follower that is slow to answer or not
	// answering, whatever the size of the entries. MaxInflightMsgs alone
	// allows MaxInflightMsgs × MaxSizePerMsg (256 MiB by default) per
	// follower and group.
	MaxInflightBytes uint64
	// Accept decides whether a message for a group this node does not have
	// may create a replica with the given id (a new learner receiving its
	// first message). It runs on the driver goroutine. Nil refuses all.
	Accept func(group, replica uint64) bool
	// OnApplied, if set, is called on the driver goroutine after every round
	// whose writes are durable, once per group that applied entries, with the
	// group's new applied index. It must not block.
	OnApplied func(group, applied uint64)
	// OnLag, if set, is called on the driver goroutine after every round
	// whose writes are durable, once per group that applied commands, with
	// how long ago the leader stamped each of them (ms, in apply order) and
	// how many entries the replica is behind the leader's commit index it
	// last heard of (0 on the leader). lagMs is valid only during the call.
	// It must not block.
	OnLag func(group uint64, leader bool, lagMs []int64, lagEntries uint64)
	// OnProposal, if set, is called on the proposer's goroutine after each
	// successful local Propose with where its time went (ProposalTimes),
	// when the loop saw every phase of it. It must be quick.
	OnProposal func(ProposalTimes)
	// PeerDisk, if set, reports the disk of the node holding replica of
	// group, for a node whose own disk is full or slow to choose whom to
	// hand its groups to (diskfull.go). Nil: every voter's is fine. It is
	// called on the driver goroutine and must not block.
	PeerDisk func(group, replica uint64) PeerDisk
	// OnLostLog, if set, is told when the leader of group names a commit
	// index beyond the last entry replica holds (lostlog.go): the replica
	// lost entries it had acknowledged, so its data went back in time. The
	// replica steps nothing more from its leader's heartbeats; the node is
	// expected to stop. It is called on the driver goroutine, once per
	// group, and may write to the store (the node stops after it).
	OnLostLog func(group, replica, last, commit uint64)
	// SlowSync is the synced-commit time above which the node calls its
	// disk slow and hands its leaderships over (diskslow.go): when the
	// median synced commit of the last 5 s took longer. 0 means
	// DefaultSlowSync; negative turns the check off.
	SlowSync time.Duration
	// RoundPause is how long the loop waits after a round batch committed
	// before it takes the next Readies, when at least 4 proposals made on
	// this node wait for their results (pace.go): the next round then
	// carries more entries for the same fixed costs. A lone caller never
	// waits for it. 0 means DefaultRoundPause; negative turns it off.
	RoundPause time.Duration
	// ClusterProtocol, if set, returns the internal protocol every node of
	// the cluster speaks (compat.ClusterProtocol); it is asked on the driver
	// goroutine, at most once every few seconds per group this node leads,
	// until the group applied the latest dedup rule (dedup.go). Nil: no
	// group is ever moved to it.
	ClusterProtocol func() int
	// OnConfChange, if set, is called on the driver goroutine after a group's
	// membership changed; removedSelf says a change removed replica, this
	// node's replica, from the group (one that applies changes made before it
	// was added is not removed). It must not block.
	OnConfChange func(group, replica uint64, removedSelf bool)
}

// DefaultMaxInflightBytes is Config.MaxInflightBytes's default: 8 MiB of
// appends in flight per follower and group. It is far more than loopback
// or a LAN needs to keep a follower busy (it is 80 MiB/s at a 100 ms round
// trip), and it bounds what a leader of many groups keeps queued for a
// follower that stopped answering: at most this much per group, not
// MaxInflightMsgs × MaxSizePerMsg (256 MiB).
const DefaultMaxInflightBytes = 8 << 20

// DefaultConfig returns the production defaults: 100 ms ticks, 1 s election
// timeout, a 2 minute dedup window.
func DefaultConfig() Config {
	return Config{
		TickInterval:        100 * time.Millisecond,
		ElectionTicks:       10,
		HeartbeatTicks:      1,
		DedupWindow:         2 * time.Minute,
		ProposalAttempt:     3 * time.Second,
		ReadRetry:           500 * time.Millisecond,
		CompactionThreshold: 10000,
		MaxSizePerMsg:       1 << 20,
		MaxInflightMsgs:     256,
		MaxInflightBytes:    DefaultMaxInflightBytes,
		SlowSync:            DefaultSlowSync,
		RoundPause:          DefaultRoundPause,
	}
}

func (c *Config) withDefaults() error {
	d := DefaultConfig()
	if c.DB == nil || c.Sender == nil || c.Directory == nil || c.Applier == nil {
		return errors.New("multiraft: DB, Sender, Directory and Applier are required")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.TickInterval <= 0 {
		c.TickInterval = d.TickInterval
	}
	if c.ElectionTicks <= 0 {
		c.ElectionTicks = d.ElectionTicks
	}
	if c.HeartbeatTicks <= 0 {
		c.HeartbeatTicks = d.HeartbeatTicks
	}
	if c.HeartbeatTicks >= c.ElectionTicks {
		return errors.New("multiraft: HeartbeatTicks must be below ElectionTicks")
	}
	if c.DedupWindow <= 0 {
		c.DedupWindow = d.DedupWindow
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ProposalAttempt <= 0 {
		c.ProposalAttempt = d.ProposalAttempt
	}
	if c.ReadRetry <= 0 {
		c.ReadRetry = d.ReadRetry
	}
	if c.CompactionThreshold == 0 {
		c.CompactionThreshold = d.CompactionThreshold
	}
	if c.MaxSizePerMsg == 0 {
		c.MaxSizePerMsg = d.MaxSizePerMsg
	}
	if c.MaxInflightMsgs <= 0 {
		c.MaxInflightMsgs = d.MaxInflightMsgs
	}
	if c.MaxInflightBytes == 0 {
		c.MaxInflightBytes = d.MaxInflightBytes
	}
	c.MaxInflightBytes = max(c.MaxInflightBytes, c.MaxSizePerMsg)
	if c.SlowSync == 0 {
		c.SlowSync = d.SlowSync
	}
	if c.RoundPause == 0 {
		c.RoundPause = d.RoundPause
	}
	return nil
}

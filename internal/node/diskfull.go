package node

import (
	"time"

	"github.com/parley-chat/parley/internal/membership"
	"github.com/parley-chat/parley/internal/multiraft"
)

// diskWatchEvery is how often a node checks whether its disk crossed the
// reserve, to tell the others by gossip.
const diskWatchEvery = 250 * time.Millisecond

// peerDisk implements multiraft.Config.PeerDisk: a node whose disk is
// full or slow hands its groups to replicas on nodes whose disk is neither
// (as gossip tells it; the engine's own checks cover this node), or, when
// its own is full, to one that is slow but not full.
func (n *Node) peerDisk(group, replica uint64) multiraft.PeerDisk {
	m := n.Map()
	if m == nil {
		return multiraft.PeerDiskFine
	}
	g, ok := m.Group(group)
	if !ok {
		return multiraft.PeerDiskFine
	}
	id, ok := replicaNodeOf(g, replica)
	switch {
	case !ok:
		return multiraft.PeerDiskUnfit
	case n.memberDiskFull(id):
		return multiraft.PeerDiskFull
	case n.memberDiskSlow(id):
		return multiraft.PeerDiskSlow
	}
	return multiraft.PeerDiskFine
}

// memberDiskFull reports whether node id's disk is below its reserve: this
// node's from its store, another's from gossip.
func (n *Node) memberDiskFull(id string) bool {
	if id == n.cfg.ID {
		return n.db.CheckSpace() != nil
	}
	ml := n.heal.gossip.Load()
	if ml == nil {
		return false
	}
	mb, ok := ml.Member(id)
	return ok && mb.Meta.DiskFull
}

// watchDisk gossips whether this node's disk is below its reserve whenever
// that changes, records the change in the cluster events and logs it, until
// the node stops. While it is, the node refuses writes (507) and hands over
// its leaderships (multiraft/diskfull.go); the planner gives it none. It
// gossips a slow disk the same way (diskslow.go).
func (n *Node) watchDisk(ml *membership.Membership) {
	t := time.NewTicker(diskWatchEvery)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		err := n.db.CheckSpace()
		meta := n.gossipDiskSlow(ml, ml.LocalMeta())
		if full := err != nil; full != meta.DiskFull {
			meta.DiskFull = full
			if uerr := ml.UpdateMeta(meta); uerr != nil && n.ctx.Err() == nil {
				n.log.Warn("cannot gossip the disk state", "disk_full", full, "err", uerr)
			}
			if full {
				n.log.Error("disk nearly full: refusing writes and handing leadership over until space is freed", "err", err)
				n.heal.events.add(EventDiskFull, n.cfg.ID, 0, err.Error())
			} else {
				n.log.Info("disk space is back: accepting writes again")
				n.heal.events.add(EventDiskOK, n.cfg.ID, 0, "space freed")
			}
		}
	}
}

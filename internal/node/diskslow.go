package node

import (
	"github.com/parley-chat/parley/internal/membership"
)

// memberDiskSlow reports whether node id's disk is slow: this node's from
// its engine (multiraft/diskslow.go), another's from gossip.
func (n *Node) memberDiskSlow(id string) bool {
	if id == n.cfg.ID {
		return n.engine != nil && n.engine.DiskSlow()
	}
	ml := n.heal.gossip.Load()
	if ml == nil {
		return false
	}
	mb, ok := ml.Member(id)
	return ok && mb.Meta.DiskSlow
}

// gossipDiskSlow gossips whether this node's disk is slow when that
// changed since meta was gossiped, records the change in the cluster
// events and logs it. While it is, the node hands its leaderships over
// (the engine does) and the others neither hand it one (peerDisk, unless theirs is full) nor
// plan it one (the planner's health); it keeps its replicas. It returns
// the meta as gossiped.
func (n *Node) gossipDiskSlow(ml *membership.Membership, meta membership.Meta) membership.Meta {
	slow := n.engine.DiskSlow()
	if slow == meta.DiskSlow {
		return meta
	}
	meta.DiskSlow = slow
	if err := ml.UpdateMeta(meta); err != nil && n.ctx.Err() == nil {
		n.log.Warn("cannot gossip the disk state", "disk_slow", slow, "err", err)
	}
	if slow {
		n.heal.events.add(EventDiskSlow, n.cfg.ID, 0, "synced commits slower than "+n.cfg.DiskSlowSync.String())
	} else {
		n.heal.events.add(EventDiskFast, n.cfg.ID, 0, "synced commits fast again")
	}
	return meta
}

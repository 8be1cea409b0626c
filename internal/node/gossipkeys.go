package node

import (
	"bytes"
	"strconv"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/membership"
	"github.com/parley-chat/parley/internal/placement"
)

// gossipKeySyncEvery is how often a node installs the gossip keys its
// metadata replica holds (a rotation reaches every node within it).
const gossipKeySyncEvery = time.Second

// gossipKeys returns the gossip keys, the one in use first: the metadata
// replica's, or those of the node's record until the replica has them. An
// insecure node gossips in plaintext (nil).
func (n *Node) gossipKeys() [][]byte {
	if n.cfg.Insecure {
		return nil
	}
	if keys, err := placement.LoadGossipKeys(n.db.State(placement.MetaGroup)); err == nil && len(keys) > 0 {
		return keys
	}
	if rec := n.rec.Load(); rec != nil {
		return rec.GossipKeys
	}
	return nil
}

// gossipKeyUseAfter is how long a node holds a new gossip key before it
// seals its own gossip with it. Each node installs the cluster's keys
// within gossipKeySyncEvery of its metadata replica applying a rotation;
// one that sealed with the new key at once was unreadable, for that long,
// to the nodes that had not installed it yet, and their probes failed
// until memberlist called it dead.
const gossipKeyUseAfter = 5 * gossipKeySyncEvery

// syncGossipKeys keeps the gossip keyring equal to the cluster's keys until
// the node stops: a new key is installed at once beside the one in use, and
// used gossipKeyUseAfter later (install everywhere, then use).
func (n *Node) syncGossipKeys(ml *membership.Membership) {
	t := time.NewTicker(gossipKeySyncEvery)
	defer t.Stop()
	var held []byte // the new key installed, not yet used
	var heldSince time.Time
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		keys := n.gossipKeys()
		if len(keys) == 0 || bytes.Equal(keys[0], ml.PrimaryKey()) {
			held = nil
			continue
		}
		if !bytes.Equal(held, keys[0]) {
			if err := ml.AddKeys(keys); err != nil {
				n.log.Warn("cannot install the cluster's gossip keys", "err", err)
				continue
			}
			held, heldSince = keys[0], time.Now()
			continue
		}
		if time.Since(heldSince) < gossipKeyUseAfter {
			continue
		}
		if err := ml.SetKeys(keys); err != nil {
			n.log.Warn("cannot install the cluster's gossip keys", "err", err)
			continue
		}
		held = nil
		n.log.Info("gossip key rotated")
	}
}

// refusalThrottle keeps a flood of refused connections or packets from
// flooding the audit log: one event a second, with the number left out.
type refusalThrottle struct {
	mu      sync.Mutex
	last    time.Time
	skipped int
}

// refusalsEvery is the least time between two audited refusals of one
// throttle.
const refusalsEvery = time.Second

// admit reports whether an event may be recorded now and, if so, how many
// were left out since the last one.
func (g *refusalThrottle) admit(now time.Time) (ok bool, skipped int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.last) < refusalsEvery {
		g.skipped++
		return false, 0
	}
	skipped, g.last, g.skipped = g.skipped, now, 0
	return true, skipped
}

// throttled records e unless g refuses it, noting the events left out.
func (n *Node) throttled(g *refusalThrottle, e audit.Event) {
	ok, skipped := g.admit(time.Now())
	if !ok {
		return
	}
	if skipped > 0 {
		e.Detail += " (and " + strconv.Itoa(skipped) + " more refused since the last event)"
	}
	n.audit.Record(e)
}

// gossipRefused audits gossip refused from remote.
func (n *Node) gossipRefused(remote, reason string) {
	n.throttled(&n.heal.gossipRefusals, audit.Event{Kind: audit.KindGossipRefused, Outcome: audit.Refused, Remote: remote, Detail: reason})
}

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

// syncGossipKeys keeps the gossip keyring equal to the cluster's keys until
// the node stops.
func (n *Node) syncGossipKeys(ml *membership.Membership) {
	t := time.NewTicker(gossipKeySyncEvery)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		keys := n.gossipKeys()
		if len(keys) == 0 || bytes.Equal(keys[0], ml.PrimaryKey()) {
			continue
		}
		if err := ml.SetKeys(keys); err != nil {
			n.log.Warn("cannot install the cluster's gossip keys", "err", err)
			continue
		}
		n.log.Info("gossip key rotated")
	}
}

// gossipRefusals throttles the audit of refused gossip: a stranger's flood
// of packets costs one event a second, with the number left out.
type gossipRefusals struct {
	mu      sync.Mutex
	last    time.Time
	skipped int
}

// refusalsEvery is the least time between two gossip refusal events.
const refusalsEvery = time.Second

// gossipRefused audits gossip refused from remote.
func (n *Node) gossipRefused(remote, reason string) {
	g := &n.heal.refusals
	g.mu.Lock()
	now := time.Now()
	if now.Sub(g.last) < refusalsEvery {
		g.skipped++
		g.mu.Unlock()
		return
	}
	skipped := g.skipped
	g.last, g.skipped = now, 0
	g.mu.Unlock()
	detail := reason
	if skipped > 0 {
		detail = reason + " (and " + strconv.Itoa(skipped) + " more refused in the last second)"
	}
	n.audit.Record(audit.Event{Kind: audit.KindGossipRefused, Outcome: audit.Refused, Remote: remote, Detail: detail})
}

package node

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/partition"
	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/transport"
)

// A node restarted from an old copy of its data directory has forgotten
// writes it acknowledged and votes it cast: letting it vote or acknowledge
// again can elect a leader without acknowledged writes. It cannot tell by
// itself; its peers can. Each start of a data directory counts up a
// generation stored in the node record before the node talks to anyone,
// with a random boot id, and sends both in every handshake
// (transport.Boot). Every node remembers, durably, the newest boot it saw
// of each peer: a peer that comes back with an older generation, or the
// same generation with another boot id, is running a copy of a data
// directory that has started before, and is refused as stale. The refused
// node marks its data directory stale and stops; it refuses to start on it
// again (loadRecord). It is rebuilt as a node that lost its data directory
// is: removed from the cluster (parley cluster remove), then started on an
// empty data directory with --join, from which it joins again.
//
// Every start announces its boot to every node of the cluster map
// (methodBoot), so that a peer that never hears from the node in normal
// traffic (followers rarely dial each other) still learns the newest boot.

// peerBootsBlob names the node blob of the boots seen of each peer.
const peerBootsBlob = "peer-boots"

// bootGuard judges the boots of peers that dial in (transport.Config.CheckBoot).
type bootGuard struct {
	mu     sync.Mutex
	db     *storage.DB
	loaded bool
	peers  map[string]transport.Boot
}

// check refuses b when the boot this node last saw of node is newer or is
// another start of the same generation; otherwise it records b, durably
// when it is new.
func (g *bootGuard) check(node string, b transport.Boot) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.loaded {
		if err := g.load(); err != nil {
			return nil // a node that cannot read its own store must not refuse its peers for it
		}
	}
	seen, ok := g.peers[node]
	switch {
	case ok && seen.Incarnation == b.Incarnation && (b.Generation < seen.Generation || b.Generation == seen.Generation && b.ID != seen.ID):
		return fmt.Errorf("node %s started from an old copy of its data directory: it is at start %d (boot %s), and this node already saw start %d (boot %s) of that directory; "+
			"its data went back in time, so it may not vote or acknowledge writes: move its data directory away, remove the node (parley cluster remove %s) and start it on an empty data directory with --join, from which it joins again and copies its replicas from its peers",
			node, b.Generation, b.ID, seen.Generation, seen.ID, node)
	case ok && seen == b:
		return nil
	}
	g.peers[node] = b
	if blob, err := json.Marshal(g.peers); err == nil {
		_ = g.db.SaveNodeBlob(peerBootsBlob, blob) // a lost update only weakens the next check
	}
	return nil
}

func (g *bootGuard) load() error {
	b, ok, err := g.db.LoadNodeBlob(peerBootsBlob)
	if err != nil {
		return err
	}
	g.peers = map[string]transport.Boot{}
	if ok {
		if err := json.Unmarshal(b, &g.peers); err != nil {
			return err
		}
	}
	g.loaded = true
	return nil
}

// countBoot counts this start in the node record of an existing data
// directory, before the node talks to anyone, and picks the boot id.
func (n *Node) countBoot() error {
	n.bootID = randomID()
	r := n.rec.Load()
	if r == nil {
		return nil // a new data directory: its record starts at generation 1 (saveRecord)
	}
	next := *r
	next.Boots++
	return n.saveRecord(&next)
}

// boot is this start's identity, sent in every handshake; zero before the
// node has a record.
func (n *Node) boot() transport.Boot {
	r := n.rec.Load()
	if r == nil {
		return transport.Boot{}
	}
	return transport.Boot{Incarnation: r.Incarnation, Generation: r.Boots, ID: n.bootID}
}

// staleRefused is told by the transport that a peer refused this node as
// stale: it marks the data directory stale, so that no later start uses
// it, and stops the node (Fatal).
func (n *Node) staleRefused(reason string) {
	n.markStale("a peer refused this node: its data directory went back in time; stopping", reason)
}

// markStale logs msg with reason, marks the data directory stale so that
// no later start uses it, and stops the node (Fatal); only the first call
// does anything.
func (n *Node) markStale(msg, reason string) {
	n.staleOnce.Do(func() {
		n.log.Error(msg, "reason", reason)
		if r := n.rec.Load(); r != nil {
			next := *r
			next.Stale = reason
			if err := n.saveRecord(&next); err != nil {
				n.log.Error("could not mark the data directory stale", "err", err)
			}
		}
		n.stopFatal(fmt.Errorf("data dir %s is stale: %s", n.cfg.DataDir, reason))
	})
}

// lostLog is told by the engine that a replica of this node lost log
// entries it had acknowledged (multiraft/lostlog.go): the data directory
// went back in time, as with a boot its peers refuse, so it is marked
// stale and the node stops. It runs on the engine's loop, which stops
// with the node, so the record is written before the store closes.
func (n *Node) lostLog(group, replica, last, commit uint64) {
	n.markStale("a replica lost writes it had acknowledged: this data directory went back in time; stopping", fmt.Sprintf("replica %d of group %d holds its Raft log up to index %d, but its leader saw it hold up to %d: this data directory lost writes it had acknowledged", replica, group, last, commit))
}

// stopFatal tells the owner of the node, through Fatal, that it must stop;
// the first reason is kept.
func (n *Node) stopFatal(err error) {
	select {
	case n.fatal <- err:
	default:
	}
}

// watchEngine stops the node (Fatal) when its Raft loop stops on its own:
// a write or fsync of the store failed, after which nothing the store holds
// can be trusted until a restart replays what is durable.
func (n *Node) watchEngine() {
	select {
	case <-n.ctx.Done():
	case <-n.engine.Done():
		if err := n.engine.Err(); err != nil && n.ctx.Err() == nil {
			n.log.Error("the store failed; stopping: restart the node, it recovers from what was written durably", "err", err)
			n.stopFatal(fmt.Errorf("store failed: %w", err))
		}
	}
}

// Fatal returns a channel that yields an error when the node must stop
// because it cannot go on safely (its data directory was found stale, or
// its store failed a write or an fsync); the
// caller shuts the node down and exits with the error.
func (n *Node) Fatal() <-chan error { return n.fatal }

// announceBoot calls every other node of the cluster map once, so each
// records this start (their CheckBoot), and reports whether one refused it
// as stale. Unreachable nodes are skipped: they learn the boot when this
// node next dials them. The answers carry the peers' clocks, which set
// this node's clock right if it started from a wrong wall clock
// (clock_jump.go).
func (n *Node) announceBoot(ctx context.Context) error {
	m := n.cmap.Load()
	if m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var stale error
	var offsets []time.Duration
	for _, nd := range m.m.Nodes {
		if nd.ID == n.cfg.ID || nd.Addr == "" {
			continue
		}
		wg.Go(func() {
			var rep partition.Reply
			sent := n.clock.Now()
			err := n.call(ctx, nd.Addr, methodBoot, nil, &rep)
			off, ok := peerClockOffset(sent, n.clock.Now(), rep.Result)
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, transport.ErrStaleData) {
				stale = err
			} else if err == nil && ok {
				offsets = append(offsets, off)
			}
		})
	}
	wg.Wait()
	if stale == nil {
		n.syncClock(offsets)
	}
	return stale
}

// callBoot answers a boot announcement (the handshake that carried it did
// the work) with this node's clock, in Unix milliseconds.
func (n *Node) callBoot(context.Context, string, []byte) (partition.Reply, error) {
	return partition.Reply{Result: binary.BigEndian.AppendUint64(nil, uint64(n.clock.Now().UnixMilli()))}, nil
}

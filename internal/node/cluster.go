package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
)

// openCluster resumes from the store, creates a new cluster, or joins one,
// and returns once the node knows the cluster map.
func (n *Node) openCluster(ctx context.Context) error {
	rec := n.rec.Load()
	switch {
	case rec != nil:
		if err := n.resume(ctx, rec); err != nil {
			return err
		}
	case n.cfg.MayCreate() && !n.rebuilding: // a rebuilt node's cluster exists
		if err := n.create(ctx); err != nil {
			return err
		}
	default:
		if err := n.join(ctx); err != nil {
			return err
		}
	}
	return n.waitReady(ctx)
}

// resume reopens every replica this node held.
func (n *Node) resume(ctx context.Context, rec *nodeRecord) error {
	var peers []uint64
	if rec.Creator {
		peers = []uint64{rec.MetaReplica}
	}
	if err := n.engine.OpenGroup(ctx, placement.MetaGroup, rec.MetaReplica, peers); err != nil {
		return err
	}
	m, ok, err := placement.LoadMap(n.db.State(placement.MetaGroup))
	if err != nil {
		return err
	}
	if !ok {
		if rec.Creator {
			return n.finishCreate(ctx, rec)
		}
		// A joined node that had not received the map yet: the metadata
		// leader will send it; the map of the join answers until then.
		if rec.JoinMap != nil {
			n.setMap(rec.JoinMap)
		}
		return nil
	}
	n.setMap(m)
	for _, g := range m.Groups[1:] {
		if r, ok := m.ReplicaOn(g.ID, n.cfg.ID); ok {
			// This node's copy of the map may be older than a removal its
			// replica applied: the removed replica stays closed.
			if err := n.engine.OpenGroup(ctx, g.ID, r.ID, nil); err != nil && !errors.Is(err, multiraft.ErrReplicaRemoved) {
				return err
			}
		}
	}
	n.log.Info("node resumed", "cluster", rec.ClusterID, "partitions", m.Partitions)
	return nil
}

// create makes a new cluster with this node as its only member. With the
// cluster's own PKI the secrets were made before the transport started
// (prepareCreate); otherwise the record is made here.
func (n *Node) create(ctx context.Context) error {
	rec := n.rec.Load()
	if rec == nil {
		rec = &nodeRecord{
			ID:          n.cfg.ID,
			ClusterID:   randomID(),
			Incarnation: randomID(),
			MetaReplica: placement.BootstrapReplicas(n.cfg.Partitions)[0],
			Creator:     true,
		}
		if !n.cfg.Insecure { // the operator's PKI: gossip is still encrypted
			key, err := newGossipKey()
			if err != nil {
				return err
			}
			rec.GossipKeys, rec.Pending = [][]byte{key}, &pendingCreate{GossipKey: key}
		}
		if err := n.saveRecord(rec); err != nil {
			return err
		}
	}
	if err := n.engine.OpenGroup(ctx, placement.MetaGroup, rec.MetaReplica, []uint64{rec.MetaReplica}); err != nil {
		return err
	}
	return n.finishCreate(ctx, rec)
}

// finishCreate bootstraps the partitions and records the new cluster map.
// It is idempotent, so a creator that crashed half-way finishes on restart.
func (n *Node) finishCreate(ctx context.Context, rec *nodeRecord) error {
	ids := placement.BootstrapReplicas(n.cfg.Partitions)
	for p := 1; p <= n.cfg.Partitions; p++ {
		if err := n.engine.OpenGroup(ctx, uint64(p), ids[p], []uint64{ids[p]}); err != nil {
			return err
		}
	}
	cmd := placement.CreateCluster{
		ClusterID:         rec.ClusterID,
		Partitions:        n.cfg.Partitions,
		ReplicationFactor: n.cfg.ReplicationFactor,
		MetaVoters:        3,
		Node:              *n.nodeInfo(rec),
	}
	if p := rec.Pending; p != nil {
		cmd.GossipKey = p.GossipKey
		if p.Token != "" {
			cmd.CA, cmd.Token = &p.CA, &p.TokenRec
			if err := n.writeJoinToken(p.Token); err != nil {
				return err
			}
		}
	}
	// Single-voter groups would elect themselves after an election timeout;
	// campaigning as soon as each has applied its bootstrap entry saves that.
	for g := uint64(0); g <= uint64(n.cfg.Partitions); g++ {
		for n.engine.Applied(g) == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		if lead, _ := n.engine.Leader(g); lead == 0 {
			_ = n.engine.Campaign(ctx, g)
		}
	}
	res, err := n.router.Propose(ctx, placement.MetaGroup, "create/"+rec.ClusterID, placement.Encode(cmd))
	if err != nil {
		return fmt.Errorf("create cluster: %w", err)
	}
	r, err := placement.DecodeResult(res)
	if err == nil && r.Code != placement.CodeAlreadyCreated {
		err = r.Err()
	}
	if err != nil {
		return fmt.Errorf("create cluster: %w", err)
	}
	rec2 := *rec
	rec2.Creator, rec2.Pending = false, nil
	if err := n.saveRecord(&rec2); err != nil {
		return err
	}
	n.created = true
	n.log.Info("created a new cluster", "cluster", rec.ClusterID, "partitions", n.cfg.Partitions, "replication_factor", n.cfg.ReplicationFactor)
	return nil
}

// join asks an existing member to add this node, trying each --join address
// until one answers. With the cluster's own PKI it proves the join token
// over TLS to a node whose CA matches the token's pin and is given its
// certificate.
func (n *Node) join(ctx context.Context) error {
	rec := &nodeRecord{ID: n.cfg.ID, Incarnation: randomID()}
	req, key, err := n.joinRequest(rec)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(req)
	var lastErr error
	for attempt := 0; ; attempt++ {
		addr := n.cfg.Join[attempt%len(n.cfg.Join)]
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		rep, err := n.callJoin(cctx, addr, body)
		cancel()
		if err == nil {
			if err = n.joined(ctx, rec, key, rep, addr); err == nil || errors.Is(err, errJoinRefused) {
				return err
			}
		}
		lastErr = err
		n.log.Warn("join attempt failed", "via", addr, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("could not join via %v: %w", n.cfg.Join, lastErr)
		case <-time.After(time.Duration(min(attempt+1, 10)) * 200 * time.Millisecond):
		}
	}
}

// waitReady waits until the node knows the cluster map.
func (n *Node) waitReady(ctx context.Context) error {
	for !n.ready.Load() {
		select {
		case <-ctx.Done():
			return errs.Wrap(errs.Unavailable, ctx.Err(), "node did not receive the cluster map")
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// nodeInfo describes this node for the cluster map.
func (n *Node) nodeInfo(rec *nodeRecord) *placement.Node {
	return &placement.Node{
		ID:          n.cfg.ID,
		Incarnation: rec.Incarnation,
		Addr:        n.self(),
		HTTPAddr:    n.httpAdvertise(),
		GossipAddr:  n.gossipAdvertise(),
		Zone:        n.cfg.Zone,
		Standby:     n.cfg.Standby,
	}
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

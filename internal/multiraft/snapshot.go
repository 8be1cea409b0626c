package multiraft

import (
	"context"
	"fmt"
	"io"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/transport"
)

// snapshotTimeout bounds one snapshot transfer.
const snapshotTimeout = 10 * time.Minute

// sendSnapshot streams the state behind a MsgSnap to its target off the loop
// and reports the outcome to Raft when done. The message itself carries only
// metadata; the data comes from the Pebble snapshot storage pinned when Raft
// asked for it.
func (e *Engine) sendSnapshot(g *group, m raftpb.Message) {
	addr, ok := e.cfg.Directory.AddrOf(m.To)
	if !ok {
		g.rn.ReportSnapshot(m.To, raft.SnapshotFailure)
		return
	}
	groupID, to, index := g.id, m.To, m.Snapshot.Metadata.Index
	e.bgWG.Add(1)
	go func() {
		defer e.bgWG.Done()
		ctx, cancel := context.WithTimeout(e.bgCtx, snapshotTimeout)
		defer cancel()
		err := e.cfg.Sender.SendSnapshot(ctx, addr, transport.GroupMessage{Group: groupID, Msg: m}, func(w io.Writer) error {
			return e.cfg.DB.SnapshotData(groupID, index, w)
		})
		status := raft.SnapshotFinish
		if err != nil {
			status = raft.SnapshotFailure
			e.log.Warn("snapshot transfer failed", "group", groupID, "to", to, "index", index, "err", err)
		} else {
			e.log.Info("snapshot sent", "group", groupID, "to", to, "index", index)
		}
		e.post(func() {
			if g := e.groups[groupID]; g != nil {
				g.rn.ReportSnapshot(to, status)
				e.markTouched(g)
			}
		})
	}()
}

// HandleSnapshot receives a snapshot's data off the loop, stages it, and then
// hands the MsgSnap to Raft, which decides whether to install it.
func (e *Engine) HandleSnapshot(ctx context.Context, msg transport.GroupMessage, data io.Reader) error {
	if msg.Msg.Type != raftpb.MsgSnap {
		return fmt.Errorf("multiraft: expected a snapshot message, got %s", msg.Msg.Type)
	}
	if err := e.cfg.DB.CheckSpace(); err != nil {
		return fmt.Errorf("multiraft: snapshot of group %d refused: %w", msg.Group, err)
	}
	p, err := e.cfg.DB.PrepareSnapshot(msg.Group, msg.Msg.Snapshot.Metadata, data)
	if err != nil {
		return fmt.Errorf("multiraft: receive snapshot of group %d: %w", msg.Group, err)
	}
	var refuse error
	derr := e.do(ctx, func() {
		g := e.groups[msg.Group]
		if g == nil {
			if e.cfg.Accept == nil || !e.cfg.Accept(msg.Group, msg.Msg.To) {
				refuse = fmt.Errorf("replica %d refused: %w", msg.Msg.To, &NoReplicaError{Group: msg.Group})
				return
			}
			if g, refuse = e.openGroup(msg.Group, msg.Msg.To, nil); refuse != nil {
				return
			}
		}
		if msg.Msg.To != g.replica {
			refuse = fmt.Errorf("multiraft: snapshot for replica %d, this node is replica %d", msg.Msg.To, g.replica)
			return
		}
		if g.prepared != nil {
			g.prepared.Close()
		}
		g.prepared, g.preparedIndex = p, msg.Msg.Snapshot.Metadata.Index
		p = nil
		_ = g.rn.Step(msg.Msg)
		e.markTouched(g)
	})
	if p != nil {
		p.Close()
	}
	if derr != nil {
		return derr
	}
	return refuse
}

// installSnapshot merges the staged snapshot Raft accepted into the round's
// batch; the group's log and state are replaced wholesale.
func (e *Engine) installSnapshot(b *storage.Batch, g *group, rd *raft.Ready) error {
	meta := rd.Snapshot.Metadata
	if g.prepared == nil || g.preparedIndex != meta.Index {
		return fmt.Errorf("group %d: raft installs snapshot %d but its data was not staged", g.id, meta.Index)
	}
	if err := b.ApplySnapshot(g.st, g.prepared); err != nil {
		return fmt.Errorf("install snapshot of group %d: %w", g.id, err)
	}
	if raft.IsEmptyHardState(rd.HardState) {
		// The snapshot's batch replaced the log; keep the hard state, with a
		// commit index no lower than the snapshot.
		hs, _, err := g.st.InitialState()
		if err != nil {
			return err
		}
		hs.Commit = max(hs.Commit, meta.Index)
		rd.HardState = hs
	}
	g.applied, g.appliedTerm = meta.Index, meta.Term
	g.setConfState(meta.ConfState)
	g.dedup = nil // the snapshot replaced the records: reload before applying
	if !g.applyPending {
		g.applyPending = true
		e.ls().cur.appliedG = append(e.ls().cur.appliedG, g)
	}
	e.ls().cur.confChanged = append(e.ls().cur.confChanged, g)
	e.log.Info("snapshot installed", "group", g.id, "index", meta.Index)
	return nil
}

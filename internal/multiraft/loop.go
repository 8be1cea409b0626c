package multiraft

import (
	"errors"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/transport"
)

// loopState is owned by the driver goroutine.
type loopState struct {
	ready    []*group // groups touched this round (the ready set)
	readies  []groupReady
	outbox   map[string][]transport.GroupMessage
	results  []appliedResult
	appliedG []*group
	// confChanged lists groups whose membership changed this round.
	confChanged []*group
}

type groupReady struct {
	g  *group
	rd raft.Ready
}

// appliedResult is a proposal result to hand out once the batch is durable.
type appliedResult struct {
	g      *group
	id     string
	result []byte
}

// markTouched puts g into the ready set of the current round.
func (e *Engine) markTouched(g *group) {
	if !g.touched {
		g.touched = true
		e.ls().ready = append(e.ls().ready, g)
	}
}

func (e *Engine) run() {
	defer close(e.done)
	ticker := time.NewTicker(e.cfg.TickInterval)
	defer ticker.Stop()
	for {
		tick := false
		select {
		case <-e.stop:
			e.shutdown()
			return
		case <-ticker.C:
			tick = true
		case <-e.wake:
		}
		if err := e.round(tick); err != nil {
			e.log.Error("raft driver stopped", "err", err)
			e.fatalErr.Store(&err)
			e.shutdown()
			return
		}
	}
}

// shutdown fails every waiter; the loop is about to exit.
func (e *Engine) shutdown() {
	e.mu.Lock()
	e.closed = true
	funcs, props, reads := e.funcs, e.proposals, e.reads
	e.funcs, e.proposals, e.reads, e.msgs = nil, nil, nil, nil
	groups := e.groups
	e.mu.Unlock()
	for _, f := range funcs {
		f()
	}
	for _, p := range props {
		p.finish(nil, ErrClosed)
	}
	for _, r := range reads {
		r.finish(ErrClosed)
	}
	for _, g := range groups {
		g.failAll(ErrClosed)
	}
	e.snapCancel()
	e.snapWG.Wait()
}

// round runs one iteration of the driver: take the inbox, tick, then process
// Ready until no group has one.
func (e *Engine) round(tick bool) error {
	e.mu.Lock()
	msgs, props, reads, funcs := e.msgs, e.proposals, e.reads, e.funcs
	e.msgs, e.proposals, e.reads, e.funcs = nil, nil, nil, nil
	e.mu.Unlock()

	for _, f := range funcs {
		f()
	}
	for i := range msgs {
		e.stepMessage(&msgs[i])
	}
	for _, p := range props {
		e.startProposal(p)
	}
	for _, r := range reads {
		e.queueRead(r)
	}
	now := time.Now()
	if tick {
		for _, g := range e.groups {
			g.rn.Tick()
			e.markTouched(g)
		}
	}
	for _, g := range e.ls().ready {
		if len(g.pendingReads) > 0 || g.inflight != nil {
			e.sendReads(g, now)
		}
	}
	for i := 0; len(e.ls().ready) > 0; i++ {
		if err := e.processReady(); err != nil {
			return err
		}
		if i > 64 {
			break // let the inbox in; the rest waits for the next round
		}
	}
	if len(e.ls().ready) > 0 {
		e.notify()
	}
	return nil
}

// stepMessage feeds one incoming message to its group, creating the replica
// when the node layer accepts it.
func (e *Engine) stepMessage(m *transport.GroupMessage) {
	g := e.groups[m.Group]
	if g == nil {
		if e.cfg.Accept == nil || !e.cfg.Accept(m.Group, m.Msg.To) {
			return
		}
		var err error
		if g, err = e.openGroup(m.Group, m.Msg.To, nil); err != nil {
			e.log.Warn("cannot create replica for incoming message", "group", m.Group, "err", err)
			return
		}
	}
	if m.Msg.To != g.replica || m.Msg.Type == raftpb.MsgSnap {
		// Addressed to an older replica of this node, or a snapshot without
		// its data (snapshots arrive through HandleSnapshot).
		return
	}
	if err := g.rn.Step(m.Msg); err != nil && !errors.Is(err, raft.ErrStepPeerNotFound) {
		e.log.Debug("step failed", "group", g.id, "type", m.Msg.Type, "err", err)
	}
	if (m.Msg.Type == raftpb.MsgHeartbeat || m.Msg.Type == raftpb.MsgApp) && g.applied >= m.Msg.Commit {
		g.caughtUpAt.Store(nowMs())
	}
	e.markTouched(g)
}

// processReady persists, sends and applies the Ready of every touched group:
// one batch, at most one fsync.
func (e *Engine) processReady() error {
	ls := e.ls()
	readies := ls.readies[:0]
	for _, g := range ls.ready {
		g.touched = false
		if g.rn.HasReady() {
			readies = append(readies, groupReady{g: g, rd: g.rn.Ready()})
		}
	}
	clear(ls.ready)
	ls.ready = ls.ready[:0]
	if len(readies) == 0 {
		ls.readies = readies
		return nil
	}
	e.stats.Rounds.Add(1)

	// Leaders send first: their append runs in parallel with replication.
	for i := range readies {
		r := &readies[i]
		if r.rd.SoftState != nil {
			e.onSoftState(r.g, r.rd.SoftState)
		}
		if r.g.isLeader {
			e.queueMessages(r.g, r.rd.Messages)
		}
	}
	e.flushOutbox()

	b := e.cfg.DB.NewBatch()
	defer b.Close()
	sync := false
	for i := range readies {
		r := &readies[i]
		s, err := e.persistReady(b, r.g, &r.rd)
		if err != nil {
			return err
		}
		sync = sync || s
	}
	if err := b.Commit(sync); err != nil {
		return fmt.Errorf("commit round batch: %w", err)
	}
	if sync {
		e.stats.Syncs.Add(1)
	}

	for i := range readies {
		r := &readies[i]
		if !r.g.isLeader {
			e.queueMessages(r.g, r.rd.Messages)
		}
	}
	e.flushOutbox()
	e.afterCommit()
	for i := range readies {
		r := &readies[i]
		if len(r.g.readyReads) > 0 {
			r.g.releaseReads()
		}
		r.g.rn.Advance(r.rd)
		e.markTouched(r.g)
		r.rd = raft.Ready{}
	}
	ls.readies = readies[:0]
	return nil
}

// onSoftState tracks leadership; a replica that loses it fails its pending
// proposals so callers retry at the new leader right away.
func (e *Engine) onSoftState(g *group, ss *raft.SoftState) {
	wasLeader := g.isLeader
	g.isLeader = ss.RaftState == raft.StateLeader
	if g.isLeader {
		g.leader.Store(g.replica)
	} else {
		g.leader.Store(ss.Lead)
	}
	if wasLeader && !g.isLeader {
		for id, ps := range g.proposals {
			for _, p := range ps {
				p.finish(nil, &NotLeaderError{Group: g.id, Leader: ss.Lead})
			}
			delete(g.proposals, id)
		}
	}
	if wasLeader != g.isLeader {
		e.log.Debug("leadership changed", "group", g.id, "leader", g.isLeader, "lead", ss.Lead)
	}
}

// persistReady writes one group's snapshot, entries, hard state and applied
// entries into the round's batch. It reports whether the batch must sync.
func (e *Engine) persistReady(b *storage.Batch, g *group, rd *raft.Ready) (bool, error) {
	sync := rd.MustSync
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := e.installSnapshot(b, g, rd); err != nil {
			return false, err
		}
		sync = true
	}
	if len(rd.Entries) > 0 {
		if err := b.Append(g.st, rd.Entries); err != nil {
			return false, fmt.Errorf("append group %d: %w", g.id, err)
		}
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := b.SetHardState(g.st, rd.HardState); err != nil {
			return false, fmt.Errorf("hard state group %d: %w", g.id, err)
		}
	}
	for _, rs := range rd.ReadStates {
		e.onReadState(g, rs.RequestCtx, rs.Index)
	}
	if err := e.applyEntries(b, g, rd.CommittedEntries); err != nil {
		return false, fmt.Errorf("apply group %d: %w", g.id, err)
	}
	return sync, nil
}

// queueMessages sorts a group's outgoing messages into per-node batches;
// snapshots go out on their own stream.
func (e *Engine) queueMessages(g *group, msgs []raftpb.Message) {
	ls := e.ls()
	for _, m := range msgs {
		if m.Type == raftpb.MsgSnap {
			e.sendSnapshot(g, m)
			continue
		}
		addr, ok := e.cfg.Directory.AddrOf(m.To)
		if !ok {
			g.rn.ReportUnreachable(m.To)
			continue
		}
		ls.outbox[addr] = append(ls.outbox[addr], transport.GroupMessage{Group: g.id, Msg: m})
	}
}

// flushOutbox hands every per-node batch to the transport.
func (e *Engine) flushOutbox() {
	ls := e.ls()
	for addr, msgs := range ls.outbox {
		if len(msgs) == 0 {
			continue
		}
		e.cfg.Sender.SendRaft(addr, msgs)
		ls.outbox[addr] = nil
	}
}

// afterCommit hands out what the now-durable batch made visible.
func (e *Engine) afterCommit() {
	ls := e.ls()
	for _, r := range ls.results {
		ps := r.g.proposals[r.id]
		for _, p := range ps {
			p.finish(r.result, nil)
		}
		delete(r.g.proposals, r.id)
	}
	clear(ls.results)
	ls.results = ls.results[:0]
	now := nowMs()
	for _, g := range ls.appliedG {
		g.appliedIdx.Store(g.applied)
		if g.isLeader {
			g.caughtUpAt.Store(now)
		}
		g.releaseReads()
		if g.prepared != nil && g.applied >= g.preparedIndex {
			g.prepared.Close()
			g.prepared = nil
		}
		if e.cfg.OnApplied != nil {
			e.cfg.OnApplied(g.id, g.applied)
		}
		g.applyPending = false
	}
	clear(ls.appliedG)
	ls.appliedG = ls.appliedG[:0]
	for _, g := range ls.confChanged {
		if e.cfg.OnConfChange != nil {
			e.cfg.OnConfChange(g.id, !isMember(g.confState, g.replica))
		}
	}
	clear(ls.confChanged)
	ls.confChanged = ls.confChanged[:0]
}

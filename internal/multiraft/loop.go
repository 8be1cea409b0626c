package multiraft

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/transport"
)

// maxInflightBatches bounds the round batches being committed at once. One
// keeps batches large (the disk is the bottleneck: fewer, fuller fsyncs);
// measured against two with BenchmarkCluster_KVPut, equal within noise.
const maxInflightBatches = 1

// loopState is owned by the driver goroutine.
type loopState struct {
	ready  []*group // groups touched since they were last processed (the ready set)
	outbox map[string][]transport.GroupMessage
	// cur is the round batch being built; apply code records its results in it.
	cur *roundBatch
	// inflight counts round batches whose commit has not completed.
	inflight int
	// readyAt is when processReady took this round's Readies.
	readyAt time.Time
	// Spare inbox slices, swapped in each round so the inbox does not
	// regrow from nothing every round.
	spareMsgs  []transport.GroupMessage
	spareProps []*proposal
	spareReads []*readRequest
	spareFuncs []func()
	// syncs times the synced round batches of the last few seconds, and
	// syncing lists those still committing (diskslow.go).
	syncs   syncTimes
	syncing []*roundBatch
}

// roundBatch is one round's writes for a set of groups, committed off the
// loop; the groups wait (no new Ready) until it completes.
type roundBatch struct {
	batch   *storage.Batch
	sync    bool
	readies []groupReady
	results []appliedResult
	// appliedG lists the groups that applied entries or a snapshot.
	appliedG []*group
	// confChanged lists groups whose membership changed.
	confChanged []*group
	// appended are the local proposals whose entries this round appends
	// (leaders only, when Config.OnProposal is set).
	appended []*proposal
	err      error
	started  time.Time // when its commit began
	took     time.Duration
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
	err    error // the command was refused without applying (a reused idempotency key)
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
	defer e.recoverFailedStore()
	ticker := time.NewTicker(e.cfg.TickInterval)
	defer ticker.Stop()
	pauser := time.NewTimer(time.Hour)
	pauser.Stop()
	for {
		tick := false
		var err error
		select {
		case <-e.stop:
			e.shutdown()
			return
		case <-ticker.C:
			tick = true
			// A read of the store's files failed (storage/readfail.go):
			// stop as on a failed commit, even with nothing to commit.
			err = e.cfg.DB.Failed()
		case <-e.wake:
		case rb := <-e.commits:
			err = e.finishRounds(rb)
			if err == nil && e.shouldPause() && !e.pause(pauser) { // pace.go
				e.shutdown()
				return
			}
		}
		if err == nil {
			err = e.round(tick)
		}
		if err != nil {
			e.stopFatal(err)
			return
		}
	}
}

// stopFatal stops the loop on a fatal error (Err).
func (e *Engine) stopFatal(err error) {
	e.log.Error("raft driver stopped", "err", err)
	e.fatalErr.Store(&err)
	e.shutdown()
}

// recoverFailedStore turns a panic of the loop into a fatal error when the
// store has failed: Raft panics on a read of its log that fails with an
// error it does not know, such as a disk's EIO (storage/readfail.go). Any
// other panic goes on.
func (e *Engine) recoverFailedStore() {
	r := recover()
	if r == nil {
		return
	}
	err := e.cfg.DB.Failed()
	if err == nil {
		panic(r)
	}
	e.stopFatal(fmt.Errorf("%w (raft: %v)", err, r))
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
	e.commitWG.Wait()
	for e.ls().inflight > 0 {
		rb := <-e.commits
		e.ls().inflight--
		rb.batch.Close()
	}
	e.bgCancel()
	e.bgWG.Wait()
}

// round runs one iteration of the driver: take the inbox, tick, then start
// a round batch for the touched groups that have a Ready.
func (e *Engine) round(tick bool) error {
	ls := e.ls()
	e.mu.Lock()
	msgs, props, reads, funcs := e.msgs, e.proposals, e.reads, e.funcs
	e.msgs, e.proposals, e.reads, e.funcs = ls.spareMsgs, ls.spareProps, ls.spareReads, ls.spareFuncs
	e.mu.Unlock()
	defer func() {
		clear(msgs)
		clear(props)
		clear(reads)
		clear(funcs)
		ls.spareMsgs, ls.spareProps, ls.spareReads, ls.spareFuncs = msgs[:0], props[:0], reads[:0], funcs[:0]
	}()

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
		e.tickGroups() // diskfull.go
		for _, g := range e.groups {
			e.maybeProposeDedupCommand(g, now)
		}
	}
	for _, g := range e.ls().ready {
		if len(g.pendingReads) > 0 || g.inflight != nil {
			e.sendReads(g, now)
		}
	}
	return e.processReady()
}

// finishRounds completes rb and every other round batch already committed.
func (e *Engine) finishRounds(rb *roundBatch) error {
	for {
		if err := e.finishRound(rb); err != nil {
			return err
		}
		select {
		case rb = <-e.commits:
		default:
			return nil
		}
	}
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
		if g, err = e.openGroup(m.Group, m.Msg.To, nil); errors.Is(err, ErrReplicaRemoved) {
			return // the leader has not applied the removal yet
		} else if err != nil {
			e.log.Warn("cannot create replica for incoming message", "group", m.Group, "err", err)
			return
		}
	}
	if m.Msg.To != g.replica || m.Msg.Type == raftpb.MsgSnap {
		// Addressed to an older replica of this node, or a snapshot without
		// its data (snapshots arrive through HandleSnapshot).
		return
	}
	if e.lostLog(g, m.Msg) {
		return
	}
	if dropForDisk(m.Msg, e.diskLow) {
		e.stats.DiskDrops.Add(1)
		if m.Msg.Type == raftpb.MsgTimeoutNow {
			return // a full disk takes no leadership (diskfull.go)
		}
		// Step it without its entries: the replica acknowledges only the
		// prefix it holds, so the leader learns where it stands and keeps
		// probing, instead of waiting for answers to appends never taken.
		m.Msg.Entries = nil
	}
	if err := g.rn.Step(m.Msg); err != nil && !errors.Is(err, raft.ErrStepPeerNotFound) {
		e.log.Debug("step failed", "group", g.id, "type", m.Msg.Type, "err", err)
	}
	if m.Msg.Type == raftpb.MsgHeartbeat || m.Msg.Type == raftpb.MsgApp {
		if g.applied >= m.Msg.Commit {
			g.caughtUpAt.Store(nowMs())
		}
		g.leaderCommit = max(g.leaderCommit, m.Msg.Commit)
	}
	e.markTouched(g)
}

// processReady persists, sends and applies the Ready of every touched group
// that is not waiting for an earlier batch: one batch, at most one fsync,
// committed off the loop so the loop keeps stepping messages and taking
// proposals meanwhile.
func (e *Engine) processReady() error {
	ls := e.ls()
	if ls.inflight >= maxInflightBatches {
		return nil // the ready set waits for a commit to complete
	}
	var readies []groupReady
	for _, g := range ls.ready {
		g.touched = false
		// A group in flight is touched again when its batch completes.
		if !g.inFlight && g.rn.HasReady() {
			readies = append(readies, groupReady{g: g, rd: g.rn.Ready()})
		}
	}
	clear(ls.ready)
	ls.ready = ls.ready[:0]
	if len(readies) == 0 {
		return nil
	}
	e.stats.Rounds.Add(1)
	ls.readyAt = time.Now()

	// Leaders send first: their append runs in parallel with replication.
	for i := range readies {
		r := &readies[i]
		wasLeader := r.g.isLeader
		if r.rd.SoftState != nil {
			e.onSoftState(r.g, r.rd.SoftState)
		}
		if r.g.isLeader {
			r.g.noteLeaderEntries(r.rd.Entries, r.g.electedIn(wasLeader, r.rd.HardState))
			e.queueMessages(r.g, r.rd.Messages)
		}
	}
	e.flushOutbox()
	if err := e.applyDurable(readies); err != nil {
		return err
	}

	rb := &roundBatch{batch: e.cfg.DB.NewBatch(), readies: readies}
	ls.cur = rb
	for i := range readies {
		r := &readies[i]
		s, err := e.persistReady(rb.batch, r.g, &r.rd)
		if err != nil {
			ls.cur = nil
			rb.batch.Close()
			return err
		}
		rb.sync = rb.sync || s
		r.g.inFlight = true
		e.stampAppended(rb, r.g, r.rd.Entries, ls.readyAt)
	}
	ls.cur = nil
	ls.inflight++
	rb.started = time.Now()
	if !rb.sync && rb.batch.Empty() {
		// Nothing to write (the round only moved commit indexes, applied
		// early, or carries messages): nothing to wait for, so the round
		// finishes here rather than on a goroutine's commit. The groups it
		// touches again get their next Ready in the next round.
		rb.err = rb.batch.Commit(false) // no Pebble commit: installs the in-memory state
		if err := e.finishRound(rb); err != nil {
			return err
		}
		e.notify()
		return nil
	}
	if rb.sync {
		ls.syncing = append(ls.syncing, rb)
	}
	e.commitWG.Add(1)
	go func() {
		defer e.commitWG.Done()
		rb.err = rb.batch.Commit(rb.sync)
		rb.took = time.Since(rb.started)
		e.commits <- rb // buffered for maxInflightBatches: never blocks
	}()
	return nil
}

// applyDurable applies, in a small unsynced batch committed first, the
// committed entries that are already durable in this node's log (persisted
// by an earlier round), and hands out their results at once: they need not
// wait for this round's fsync. A crash may keep this batch without the
// round's: its entries were synced before, so the applied index never runs
// ahead of the durable log. Entries that arrive in the same Ready stay in
// the round batch.
func (e *Engine) applyDurable(readies []groupReady) error {
	ls := e.ls()
	var early *roundBatch
	for i := range readies {
		r := &readies[i]
		ents := r.rd.CommittedEntries
		if len(ents) == 0 || !raft.IsEmptySnap(r.rd.Snapshot) {
			continue
		}
		n := 0
		for n < len(ents) && ents[n].Index <= r.g.durable {
			n++
		}
		if n == 0 {
			continue
		}
		if early == nil {
			early = &roundBatch{batch: e.cfg.DB.NewBatch()}
			ls.cur = early
		}
		if err := e.applyEntries(early.batch, r.g, ents[:n]); err != nil {
			ls.cur = nil
			early.batch.Close()
			return fmt.Errorf("apply group %d: %w", r.g.id, err)
		}
		r.rd.CommittedEntries = ents[n:] // Advance ignores its argument
	}
	if early == nil {
		return nil
	}
	ls.cur = nil
	defer early.batch.Close()
	if err := early.batch.Commit(false); err != nil {
		return fmt.Errorf("commit applied entries: %w", err)
	}
	e.afterCommit(early)
	return nil
}

// finishRound runs once a round batch is durable: the groups' other messages
// go out, results and reads are handed out, and Raft is told to advance.
func (e *Engine) finishRound(rb *roundBatch) error {
	ls := e.ls()
	ls.inflight--
	ls.syncing = slices.DeleteFunc(ls.syncing, func(x *roundBatch) bool { return x == rb })
	defer rb.batch.Close()
	if rb.err != nil {
		return fmt.Errorf("commit round batch: %w", rb.err)
	}
	e.stats.CommitNanos.Add(uint64(rb.took))
	if rb.sync {
		e.stats.Syncs.Add(1)
		e.stats.SyncNanos.Add(uint64(rb.took))
		ls.syncs.add(time.Now(), rb.took)
	}
	if len(rb.appended) > 0 {
		stampSynced(rb, time.Now())
	}
	for i := range rb.readies {
		r := &rb.readies[i]
		if !r.g.isLeader {
			e.queueMessages(r.g, r.rd.Messages)
		}
	}
	e.flushOutbox()
	e.afterCommit(rb)
	for i := range rb.readies {
		r := &rb.readies[i]
		if !raft.IsEmptySnap(r.rd.Snapshot) {
			r.g.durable = r.rd.Snapshot.Metadata.Index
		}
		if n := len(r.rd.Entries); n > 0 {
			r.g.durable = r.rd.Entries[n-1].Index // the log now ends here
		}
		if len(r.g.readyReads) > 0 {
			r.g.releaseReads()
		}
		r.g.rn.Advance(r.rd)
		for _, ch := range r.g.confApplied {
			ch <- nil // Raft now counts the change applied: the next one may follow
		}
		r.g.confApplied = r.g.confApplied[:0]
		r.g.inFlight = false
		e.markTouched(r.g)
	}
	return nil
}

// onSoftState tracks leadership; a replica that loses it fails its pending
// proposals so callers retry at the new leader right away.
func (e *Engine) onSoftState(g *group, ss *raft.SoftState) {
	wasLeader, prevLead := g.isLeader, g.leader.Load()
	if g.inflight != nil && ss.Lead != raft.None && ss.Lead != prevLead {
		// The new leader knows nothing of the round sent to the old one
		// (and an old leader forgets its own when it steps down): send it
		// again at the next round, not after ReadRetry.
		g.inflight.sentAt = time.Time{}
	}
	g.isLeader = ss.RaftState == raft.StateLeader
	// A leader on a full disk hands over from its first round (diskfull.go):
	// until its first tick finds a taker, writes are told to look elsewhere.
	g.handingOver.Store(g.isLeader && e.diskLow())
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
		// A change not yet applied may still be, by the next leader; its
		// proposer learns no more here and retries at the new leader.
		for id, ch := range g.confWaits {
			ch <- &NotLeaderError{Group: g.id, Leader: ss.Lead}
			delete(g.confWaits, id)
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
	if !raft.IsEmptyHardState(rd.HardState) && !onlyCommitMoved(g.st, rd) {
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

// onlyCommitMoved reports whether rd would save nothing but a higher commit
// index: no entries, no snapshot, and the term and vote already saved. Such
// a hard state is not written. The commit index is not needed for safety:
// the committed entries are in the durable log, Raft learns the commit index
// again from the leader, and the store starts a group at least at its
// applied index (storage.committedAtLeastApplied). Not writing it spares the
// round that only advances the commit index (one in two at low load) a
// Pebble commit and a goroutine: its batch stays empty (processReady).
// The saved hard state is read (under the store's lock) only for a Ready
// without entries: under load almost every round appends.
func onlyCommitMoved(st *storage.GroupStorage, rd *raft.Ready) bool {
	if len(rd.Entries) > 0 || !raft.IsEmptySnap(rd.Snapshot) {
		return false
	}
	saved := st.HardState()
	return rd.HardState.Term == saved.Term && rd.HardState.Vote == saved.Vote
}

// queueMessages sorts a group's outgoing messages into per-node batches;
// snapshots go out on their own stream.
func (e *Engine) queueMessages(g *group, msgs []raftpb.Message) {
	ls := e.ls()
	for _, m := range msgs {
		if m.Type == raftpb.MsgSnap {
			if g.fullPeers[m.To] {
				// Its disk is full and it refuses snapshots (HandleSnapshot):
				// sending one would dial and read the group's state for
				// nothing, again every heartbeat (noteFullPeers).
				g.rn.ReportSnapshot(m.To, raft.SnapshotFailure)
				e.stats.FullPeerStrips.Add(1)
				continue
			}
			e.sendSnapshot(g, m)
			continue
		}
		addr, ok := e.cfg.Directory.AddrOf(m.To)
		if !ok {
			g.rn.ReportUnreachable(m.To)
			continue
		}
		if g.fullPeers[m.To] && carriesCommands(m) {
			m.Entries = nil // its disk is full: it would drop them (noteFullPeers)
			e.stats.FullPeerStrips.Add(1)
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
		e.cfg.Sender.SendRaft(addr, msgs) // copies what it keeps: reuse the slice
		clear(msgs)
		ls.outbox[addr] = msgs[:0]
	}
}

// afterCommit hands out what the now-durable batch made visible.
func (e *Engine) afterCommit(rb *roundBatch) {
	for _, r := range rb.results {
		ps := r.g.proposals[r.id]
		for _, p := range ps {
			p.finish(r.result, r.err)
		}
		delete(r.g.proposals, r.id)
	}
	now := nowMs()
	for _, g := range rb.appliedG {
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
		e.reportLag(g, now)
		g.applyPending = false
	}
	for _, g := range rb.confChanged {
		if e.cfg.OnConfChange != nil {
			e.cfg.OnConfChange(g.id, g.replica, g.removed)
		}
	}
}

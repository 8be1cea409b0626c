package multiraft

import (
	"encoding/binary"
	"errors"
	"fmt"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/storage"
)

// applyEntries applies committed entries of one group into the round's batch,
// with the group's applied index and membership in the same batch.
func (e *Engine) applyEntries(b *storage.Batch, g *group, ents []raftpb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	ls := e.ls()
	w := b.State(g.st)
	if err := g.loadApplyState(w); err != nil {
		return err
	}
	lastTime := g.lastTimeMs
	for i := range ents {
		ent := &ents[i]
		if ent.Index <= g.applied {
			continue // already applied (a restart replays from Config.Applied)
		}
		switch ent.Type {
		case raftpb.EntryNormal:
			if len(ent.Data) > 0 {
				if err := e.applyCommand(w, g, ent); err != nil {
					return err
				}
			}
		case raftpb.EntryConfChange:
			var cc raftpb.ConfChange
			if err := cc.Unmarshal(ent.Data); err != nil {
				return fmt.Errorf("decode conf change at %d: %w", ent.Index, err)
			}
			e.applyConfChange(g, cc.AsV2())
		case raftpb.EntryConfChangeV2:
			var cc raftpb.ConfChangeV2
			if err := cc.Unmarshal(ent.Data); err != nil {
				return fmt.Errorf("decode conf change at %d: %w", ent.Index, err)
			}
			e.applyConfChange(g, cc)
		}
		g.applied, g.appliedTerm = ent.Index, ent.Term
		e.stats.EntriesApplied.Add(1)
	}
	if g.lastTimeMs != lastTime {
		if err := w.Set(keyLastTime, binary.BigEndian.AppendUint64(nil, uint64(g.lastTimeMs))); err != nil {
			return err
		}
	}
	if err := b.SetApplied(g.st, storage.AppliedState{Index: g.applied, Term: g.appliedTerm, ConfState: g.confState}); err != nil {
		return err
	}
	if to, ok := e.compactTo(g); ok {
		// ErrCompacted: a snapshot installed this round already dropped it.
		if err := b.Compact(g.st, to); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return fmt.Errorf("compact log: %w", err)
		}
	}
	if !g.applyPending {
		g.applyPending = true
		ls.cur.appliedG = append(ls.cur.appliedG, g)
	}
	return nil
}

// applyCommand applies one proposal exactly once: a proposal id seen within
// its dedup window returns the recorded result instead of applying again.
func (e *Engine) applyCommand(w state.Writer, g *group, ent *raftpb.Entry) error {
	env, err := decodeEnvelope(ent.Data)
	if err != nil {
		// Every replica skips the same malformed entry alike.
		e.log.Error("skipping malformed entry", "group", g.id, "index", ent.Index, "err", err)
		return nil
	}
	// Times never go backwards within a partition.
	ts := max(env.timeMs, g.lastTimeMs)
	g.lastTimeMs = ts
	g.lagStamps = append(g.lagStamps, env.timeMs)
	if result, handled, err := e.applyReserved(w, g, ent.Index, ts, env.cmd); handled || err != nil {
		if err == nil {
			e.handOut(g, env.id, result)
		}
		return err
	}
	g.lastCommand = ent.Index // the leader's idleness, for sweeps only: never in the state
	var result []byte
	recorded, reused := g.dedup.lookupChecked(env.id, ts)
	switch {
	case reused:
		// The client's idempotency key was used for another request within
		// its window: nothing is applied, on every replica alike.
	case recorded != nil:
		if result, err = g.dedup.result(w, recorded); err != nil {
			return err
		}
	default:
		result, err = g.sm.Apply(w, state.Meta{Partition: g.id, Index: ent.Index, TimeMs: ts}, env.cmd)
		if err != nil {
			return err
		}
		if err := g.dedup.record(w, env.id, ts, env.windowMs, result); err != nil {
			return err
		}
	}
	if err := g.dedup.expireAfter(w, ent.Index, ts); err != nil {
		return err
	}
	if reused {
		e.handOutErr(g, env.id, errKeyReused())
	} else {
		e.handOut(g, env.id, result)
	}
	return nil
}

// applyReserved applies the engine-reserved commands this build knows
// (handled true); each is neither a domain command nor de-duplicated. A
// checksum marker's sum is then the state at rest at its index (a retried
// marker just applies again); a dedup rule command moves the group to its
// rule from this index on, and a sweep deletes what expired by the rule in
// force (applying either twice changes nothing more).
func (e *Engine) applyReserved(w state.Writer, g *group, index uint64, ts int64, cmd []byte) (result []byte, handled bool, err error) {
	switch {
	case isChecksumCommand(cmd):
		result, err = e.applyChecksum(w, g, index, cmd)
		return result, true, err
	case isDedupSweep(cmd):
		return nil, true, g.dedup.sweep(w, ts)
	}
	if rule, ok := dedupRuleOf(cmd); ok {
		return nil, true, g.dedup.setRule(w, rule)
	}
	return nil, false, nil
}

// handOut queues a result for the local proposer waiting for it, if any; it
// gets it once the batch is durable.
func (e *Engine) handOut(g *group, id, result []byte) {
	if ps, waiting := g.proposals[string(id)]; waiting {
		e.stampApplied(ps)
		ls := e.ls()
		ls.cur.results = append(ls.cur.results, appliedResult{g: g, id: string(id), result: result})
	}
}

// handOutErr queues a refusal for the local proposer waiting for id, if any.
func (e *Engine) handOutErr(g *group, id []byte, err error) {
	if ps, waiting := g.proposals[string(id)]; waiting {
		e.stampApplied(ps)
		ls := e.ls()
		ls.cur.results = append(ls.cur.results, appliedResult{g: g, id: string(id), err: err})
	}
}

// applyConfChange applies a membership change to Raft and records it. Its
// proposer is told once the round is advanced (finishRound): before that,
// Raft still counts the change as pending and would turn the next one into
// a no-op.
func (e *Engine) applyConfChange(g *group, cc raftpb.ConfChangeV2) {
	g.setConfState(*g.rn.ApplyConfChange(cc))
	if ch, ok := g.confWaits[string(cc.Context)]; ok && len(cc.Context) > 0 {
		g.confApplied = append(g.confApplied, ch)
		delete(g.confWaits, string(cc.Context))
	}
	e.ls().cur.confChanged = append(e.ls().cur.confChanged, g)
}

// loadApplyState reads what Apply keeps in memory — the last applied time
// and the dedup records — when the group opened or a snapshot replaced its
// state, and resets what the state machine keeps (state.Resetter). w sees
// the round's batch, snapshot included.
func (g *group) loadApplyState(w state.Reader) error {
	if g.dedup != nil {
		return nil
	}
	if r, ok := g.sm.(state.Resetter); ok {
		r.Reset()
	}
	v, ok, err := w.Get(keyLastTime)
	if err != nil {
		return err
	}
	g.lastTimeMs = 0
	if ok && len(v) == 8 {
		g.lastTimeMs = int64(binary.BigEndian.Uint64(v))
	}
	g.dedup, err = loadDedupCache(w)
	return err
}

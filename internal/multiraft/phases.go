package multiraft

import (
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// ProposalTimes is where one successful local proposal spent its time, in
// the order it went (Config.OnProposal). The phases add up to Total.
type ProposalTimes struct {
	// Queue is from Propose to the start of the round that appended the
	// entry to the leader's log: the wait for the loop and for the round
	// batch in flight before it.
	Queue time.Duration
	// Append is that round: the leader's append, fsync included, while the
	// entry is sent to the followers.
	Append time.Duration
	// Quorum is from the leader's append being durable to the Ready that
	// carried the entry as committed: the wait for a follower's durable
	// append and its acknowledgement (and for any round in flight then).
	Quorum time.Duration
	// Apply is the state machine's work on the entry, from that Ready to
	// its result.
	Apply time.Duration
	// Answer is from the result to the proposer holding it: the commit of
	// the batch holding the apply (an fsync when the round also appends new
	// entries) and the hand-off between goroutines.
	Answer time.Duration
	// Total is from Propose to its return.
	Total time.Duration
}

// phaseStamps are the loop's timestamps of one proposal, written on the
// loop goroutine and read by the proposer after it received its result.
type phaseStamps struct {
	start, round, synced, committed, applied time.Time
}

// times turns the stamps into phases; ok is false when a stamp is missing
// (the entry was appended by an earlier attempt with the same id, or the
// leader appended it in a round without the bookkeeping).
func (s *phaseStamps) times(end time.Time) (t ProposalTimes, ok bool) {
	if s.round.IsZero() || s.synced.IsZero() || s.committed.IsZero() || s.applied.IsZero() {
		return t, false
	}
	span := func(a, b time.Time) time.Duration { return max(b.Sub(a), 0) }
	return ProposalTimes{
		Queue:  span(s.start, s.round),
		Append: span(s.round, s.synced),
		Quorum: span(s.synced, s.committed),
		Apply:  span(s.committed, s.applied),
		Answer: span(s.applied, end),
		Total:  span(s.start, end),
	}, true
}

// stampAppended notes the round start on the proposals whose entries the
// leader appends in this round and keeps them in rb to stamp once the
// round is durable. It costs a map lookup per entry, no clock read.
func (e *Engine) stampAppended(rb *roundBatch, g *group, ents []raftpb.Entry, at time.Time) {
	if e.cfg.OnProposal == nil || !g.isLeader || len(g.proposals) == 0 {
		return
	}
	for i := range ents {
		if ents[i].Type != raftpb.EntryNormal || len(ents[i].Data) == 0 {
			continue
		}
		env, err := decodeEnvelope(ents[i].Data)
		if err != nil {
			continue
		}
		for _, p := range g.proposals[string(env.id)] {
			if p.stamps.round.IsZero() {
				p.stamps.round = at
				rb.appended = append(rb.appended, p)
			}
		}
	}
}

// stampSynced notes when the round that appended rb's proposals became
// durable.
func stampSynced(rb *roundBatch, at time.Time) {
	for _, p := range rb.appended {
		if p.stamps.synced.IsZero() {
			p.stamps.synced = at
		}
	}
}

// stampApplied notes, on the local proposers of one applied command, the
// Ready that carried it committed and the end of its apply.
func (e *Engine) stampApplied(ps []*proposal) {
	if e.cfg.OnProposal == nil || len(ps) == 0 {
		return
	}
	now := time.Now()
	for _, p := range ps {
		p.stamps.committed = e.ls().readyAt
		p.stamps.applied = now
	}
}

package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Proposal phases, the values of the phase label of
// parley_raft_proposal_phase_seconds, in the order a proposal goes through
// them.
const (
	PhaseQueue  = "queue"  // Propose to the start of the round appending it
	PhaseAppend = "append" // the leader's append and fsync
	PhaseQuorum = "quorum" // append durable to committed: a follower's ack
	PhaseApply  = "apply"  // the state machine's work
	PhaseAnswer = "answer" // result to the proposer (the apply batch's commit)
	PhaseTotal  = "total"  // Propose to its return
)

// ProposalPhases is the histogram parley_raft_proposal_phase_seconds: where
// the proposals this node led spent their time, by phase.
type ProposalPhases struct {
	obs [6]prometheus.Observer
}

// NewProposalPhases registers the proposal phase histogram in m.
func NewProposalPhases(m *Metrics) *ProposalPhases {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "parley_raft_proposal_phase_seconds",
		Help: "Where proposals led by this node spent their time, by phase: queue (wait for a round), append (leader append + fsync), quorum (until committed), apply, answer (apply batch commit and hand-off), total.",
		// 20 us .. 5.2 s: a phase can be a few microseconds (apply) or a
		// whole election.
		Buckets: prometheus.ExponentialBuckets(0.00002, 2, 19),
	}, []string{"phase"})
	m.reg.MustRegister(h)
	p := &ProposalPhases{}
	for i, name := range []string{PhaseQueue, PhaseAppend, PhaseQuorum, PhaseApply, PhaseAnswer, PhaseTotal} {
		p.obs[i] = h.WithLabelValues(name)
	}
	return p
}

// PhaseTimes is one proposal's time in each phase (the phase constants
// say what each is); the fields match multiraft.ProposalTimes.
type PhaseTimes struct {
	Queue, Append, Quorum, Apply, Answer, Total time.Duration
}

// Observe records one proposal's phases.
func (p *ProposalPhases) Observe(t PhaseTimes) {
	for i, d := range [...]time.Duration{t.Queue, t.Append, t.Quorum, t.Apply, t.Answer, t.Total} {
		p.obs[i].Observe(d.Seconds())
	}
}

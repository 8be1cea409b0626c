package multiraft

import (
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// compactTo returns the index up to which group g's log may be discarded
// now; ok is false when that is not yet worth a compaction. See DESIGN.md,
// "How much log a replica keeps".
func (e *Engine) compactTo(g *group) (to uint64, ok bool) {
	limit := e.cfg.CompactionThreshold
	tail, step := logTail(limit), logStep(limit)
	first, err := g.st.FirstIndex()
	if err != nil || g.applied <= tail {
		return 0, false
	}
	to = g.applied - tail
	if g.isLeader {
		g.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
			if id != g.replica {
				to = min(to, pr.Match)
			}
		})
		// A replica that lacks what this log no longer holds, or whose
		// progress is not known yet (Match 0 until it answers a new
		// leader), may still be nearer than it looks: keep all there is...
		to = max(to, first-1)
		if g.applied-to > limit {
			to = g.applied - limit/2 // ...up to the limit; further behind gets a snapshot
		}
	}
	if to < first || to-first+1 < step {
		return 0, false
	}
	return to, true
}

// logTail is how many applied entries a replica keeps behind its applied
// index when no replica it knows of needs more: a tenth of the limit.
func logTail(limit uint64) uint64 { return max(limit/10, 1) }

// logStep is how many entries a compaction discards at least, so that a
// busy group writes one range deletion per logStep entries, not per round.
func logStep(limit uint64) uint64 { return max(limit/20, 1) }

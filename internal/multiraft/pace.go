package multiraft

import "time"

// DefaultRoundPause is Config.RoundPause's default.
const DefaultRoundPause = 150 * time.Microsecond

// pauseMinWaiting is how many of this node's proposals must be waiting for
// their results for a committed round to be followed by a pause: one or two
// callers at a time gain nothing from waiting, since no other proposal is
// on its way to join the next round.
const pauseMinWaiting = 4

// shouldPause reports whether the loop waits Config.RoundPause before the
// next round: the pause is on, and at least pauseMinWaiting proposals made
// on this node wait for their results. Under that load the next round then
// carries what arrived meanwhile, so each round's fixed costs (the store's
// commit and fsync, one Raft message batch per peer, the wake-ups of the
// goroutines that carry them) are shared by more entries.
func (e *Engine) shouldPause() bool {
	if e.cfg.RoundPause <= 0 {
		return false
	}
	waiting := 0
	for _, g := range e.groups {
		if waiting += len(g.proposals); waiting >= pauseMinWaiting {
			return true
		}
	}
	return false
}

// pause waits Config.RoundPause, or until the engine stops; it reports
// false when the engine is stopping.
func (e *Engine) pause(t *time.Timer) bool {
	e.stats.RoundPauses.Add(1)
	t.Reset(e.cfg.RoundPause)
	select {
	case <-t.C:
		return true
	case <-e.stop:
		t.Stop()
		return false
	}
}

package multiraft

import (
	"slices"
	"time"
)

// A node whose disk turns slow makes every group it leads slow: a leader
// acknowledges a write only once its own round batch is synced. So the
// engine times every synced round batch (finishRound) and, while the
// lower median of the synced commits of the last slowSyncWindow took
// longer than Config.SlowSync (of at least slowSyncMin of them, so that one
// stall of a busy machine among fast commits proves nothing; the oldest
// synced commit still running counts as one, as long as it has run, so a
// slow disk is seen before its commits end), it calls its disk slow:
//
//   - it hands the leadership of every group it leads to the most
//     up-to-date follower whose node's disk is fine (Config.PeerDisk, which
//     the node layer answers from gossip: neither full nor slow), once per
//     tick until one takes it — the mechanism of a full disk (diskfull.go);
//   - unlike a full disk, it still ticks its followers and stores what it
//     is sent: a slow disk is still a disk, and a group whose replicas are
//     all slow must still elect a leader;
//   - DiskSlow reports it, for the node layer to gossip (so others neither
//     hand it leadership nor plan it any) and record.
//
// It calls the disk fast again once the median of the window is at most
// the threshold. A disk that hangs outright completes no sync, so the
// window may hold nothing but its running commit: that one alone calls the
// disk slow once it has run hungSyncFactor times the threshold (5 s by
// default), far longer than any stall of a busy machine. Such a node's
// groups cannot hand over (no Ready leaves a group whose batch is in
// flight) and stop heartbeating, so their followers elect other leaders;
// what the check adds is the gossip, the event and the metric that tell
// the operator, and no leadership planned for the node.

// Slow-disk detection constants.
const (
	// DefaultSlowSync is Config.SlowSync's default.
	DefaultSlowSync = 500 * time.Millisecond
	// slowSyncWindow is how far back synced commits are looked at.
	slowSyncWindow = 5 * time.Second
	// slowSyncMin is how many synced commits the window needs before the
	// disk may be called slow: two, since a disk slow enough to matter
	// completes few.
	slowSyncMin = 2
	// hungSyncFactor times the threshold is how long one synced commit
	// must run to call the disk slow on its own: a hung disk.
	hungSyncFactor = 10
)

// syncSample is one synced round batch: when it finished, how long it took.
type syncSample struct {
	at   time.Time
	took time.Duration
}

// syncTimes keeps the synced commits of the last slowSyncWindow; the loop
// goroutine owns it.
type syncTimes struct {
	samples []syncSample
	scratch []time.Duration
}

// add records a synced commit that took took, finished at now.
func (s *syncTimes) add(now time.Time, took time.Duration) {
	s.trim(now)
	s.samples = append(s.samples, syncSample{at: now, took: took})
}

// trim forgets the samples older than the window.
func (s *syncTimes) trim(now time.Time) {
	i := 0
	for i < len(s.samples) && now.Sub(s.samples[i].at) > slowSyncWindow {
		i++
	}
	if i > 0 {
		s.samples = append(s.samples[:0], s.samples[i:]...)
	}
}

// slow reports whether the lower median of the window's samples, and of
// running (how long the oldest synced commit still running has run, 0 for
// none), is above threshold, with at least slowSyncMin of them; or whether
// running alone passed hungSyncFactor times the threshold.
func (s *syncTimes) slow(now time.Time, threshold, running time.Duration) bool {
	if threshold > 0 && running > hungSyncFactor*threshold {
		return true
	}
	s.trim(now)
	s.scratch = s.scratch[:0]
	for _, x := range s.samples {
		s.scratch = append(s.scratch, x.took)
	}
	if running > 0 {
		s.scratch = append(s.scratch, running)
	}
	if threshold <= 0 || len(s.scratch) < slowSyncMin {
		return false
	}
	slices.Sort(s.scratch)
	return s.scratch[(len(s.scratch)-1)/2] > threshold
}

// checkDiskSlow updates the slow-disk state once per tick and reports it.
func (e *Engine) checkDiskSlow(now time.Time) bool {
	ls := e.ls()
	var running time.Duration
	for _, rb := range ls.syncing {
		running = max(running, now.Sub(rb.started))
	}
	slow := ls.syncs.slow(now, e.cfg.SlowSync, running)
	if e.diskSlow.Swap(slow) != slow {
		if slow {
			e.log.Warn("disk slow: synced commits take over the threshold; handing leadership over", "threshold", e.cfg.SlowSync)
		} else {
			e.log.Info("disk fast again: synced commits back under the threshold", "threshold", e.cfg.SlowSync)
		}
	}
	return slow
}

// DiskSlow reports whether this node's disk is slow: the median synced
// commit of the last few seconds took longer than Config.SlowSync.
func (e *Engine) DiskSlow() bool { return e.diskSlow.Load() }

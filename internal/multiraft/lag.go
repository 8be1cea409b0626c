package multiraft

// reportLag turns the leader stamps of the commands a group applied in a
// now-durable round into lag samples: how long after the leader stamped a
// command it became visible on this replica (clock skew between nodes
// shows here; a negative lag counts as 0), and how many entries the replica
// is behind the leader's commit index it last heard of. It runs on the loop.
func (e *Engine) reportLag(g *group, now int64) {
	if len(g.lagStamps) == 0 {
		return
	}
	var behind uint64
	if !g.isLeader && g.leaderCommit > g.applied {
		behind = g.leaderCommit - g.applied
	}
	lags := g.lagStamps
	for i, ts := range lags {
		lags[i] = max(now-ts, 0)
	}
	g.lagMs.Store(lags[len(lags)-1])
	g.lagEntries.Store(behind)
	g.lagAt.Store(now)
	if e.cfg.OnLag != nil {
		e.cfg.OnLag(g.id, g.isLeader, lags, behind)
	}
	g.lagStamps = lags[:0]
}

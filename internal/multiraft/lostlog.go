package multiraft

import (
	raftpb "go.etcd.io/raft/v3/raftpb"
)

// A leader's heartbeat names a commit index of at most what the follower
// acknowledged holding (raft sends min(Match, committed)), and a follower
// acknowledges only entries it made durable. A heartbeat whose commit is
// beyond the follower's last entry therefore means the follower lost
// entries it had acknowledged: its data directory went back in time (an
// old copy restored, a disk that lost synced writes). Raft panics on such
// a heartbeat. The engine checks first: it drops the message, logs, and
// tells the node (Config.OnLostLog), which marks its data directory stale
// and stops, as when a peer refuses its boot (node/boot.go). The boot
// check finds most old copies before this; this one finds the copies that
// start talking Raft before their boot is announced, and disks that lose
// synced data.

// lostLog reports whether m, sent to g's replica, shows that the replica
// lost acknowledged entries; the first time, it logs and calls
// Config.OnLostLog.
func (e *Engine) lostLog(g *group, m raftpb.Message) bool {
	if m.Type != raftpb.MsgHeartbeat {
		return false
	}
	last, err := g.st.LastIndex()
	if err != nil || m.Commit <= last {
		return false
	}
	if !g.lostLog {
		g.lostLog = true
		e.log.Error("this replica lost log entries it had acknowledged: its data went back in time",
			"group", g.id, "replica", g.replica, "last_index", last, "leader_commit", m.Commit, "leader", m.From)
		if e.cfg.OnLostLog != nil {
			e.cfg.OnLostLog(g.id, g.replica, last, m.Commit)
		}
	}
	return true
}

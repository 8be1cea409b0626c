package multiraft

import (
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/storage"
)

// stop takes n down: cleanly (its engine stops, its store closes) or in a
// crash, which keeps only what its file system had synced at that instant.
func (c *icluster) stop(n *inode, crash bool) string {
	if crash {
		// The crash instant: cut it off first, so that nothing it sends
		// later counts (a crashed node sends nothing), then record what it
		// sent, then keep what it synced.
		c.net.mu.Lock()
		c.net.down[n.name] = true
		c.net.mu.Unlock()
		sends := n.sentSoFar(c.net.rec.snapshot())
		clone := n.fs.CrashClone(vfs.CrashCloneCfg{})
		j := c.journalOf(n.db)
		c.down(n)
		c.net.mu.Lock()
		delete(c.net.down, n.name)
		c.net.mu.Unlock()
		n.fs, n.before, n.crashed, n.sends = &syncTrap{MemFS: clone}, j, true, sends
		return n.name + " crashed"
	}
	sends := n.sentSoFar(c.net.rec.snapshot())
	c.mu.Lock()
	e, db := n.eng, n.db
	c.mu.Unlock()
	c.net.mu.Lock()
	delete(c.net.engines, n.name)
	c.net.mu.Unlock()
	e.Close() // nothing changes the store after this
	j, applied, sum := c.storeState(db)
	c.down(n)
	n.before, n.crashed, n.appliedIdx, n.sum, n.sends = j, false, applied, sum, sends
	return n.name + " stopped"
}

// crashAtSync arms n's file system to crash at its next WAL sync: the
// clone keeps what was synced before it, and the messages n sent up to that
// instant must all be backed by it (await-crash takes n down, restart
// checks).
func (c *icluster) crashAtSync(n *inode) string {
	n.trapped = make(chan struct{})
	n.fs.arm(func() {
		c.net.mu.Lock()
		c.net.down[n.name] = true // what it sends from now on never left it
		c.net.mu.Unlock()
		n.sends = n.sentSoFar(c.net.rec.snapshot())
		n.clone = n.fs.CrashClone(vfs.CrashCloneCfg{})
		close(n.trapped)
	})
	return n.name + " crashes at its next sync"
}

// awaitCrash waits for n's armed crash and takes it down.
func (c *icluster) awaitCrash(n *inode) string {
	select {
	case <-n.trapped:
	case <-time.After(10 * time.Second):
		return n.name + " never synced"
	}
	n.before = c.journalOf(n.db) // what it applied by now, the crash's included
	c.down(n)
	c.net.mu.Lock()
	delete(c.net.down, n.name)
	c.net.mu.Unlock()
	n.fs, n.crashed = &syncTrap{MemFS: n.clone}, true
	return n.name + " crashed at a sync"
}

// sentSoFar returns the messages n sent, from the recorder's events.
func (n *inode) sentSoFar(events []event) []event {
	var out []event
	for _, ev := range events {
		if ev.kind == "send" && ev.node == n.name {
			out = append(out, ev)
		}
	}
	return out
}

// restart brings n back. Before its engine starts, its store must hold what
// a client and the other replicas rely on: after a clean stop, exactly the
// state it stopped with; after a crash, a prefix of the journal it had, and
// every append it acknowledged and vote it granted (the Ready contract:
// persist, then send). With ahead, its log must also hold entries it has
// not applied.
func (c *icluster) restart(n *inode, sc *scriptCase) string {
	db, err := storage.Open("db", storage.Options{FS: n.fs.fs()})
	if err != nil {
		return fmt.Sprintf("%s: reopen: %v", n.name, err)
	}
	j, applied, sum := c.storeState(db)
	g, err := db.Group(1)
	if err != nil {
		c.t.Fatal(err)
	}
	last, _ := g.LastIndex()
	hs, _, _ := g.InitialState()
	db.Close()

	var problems []string
	if applied > last && last > 0 {
		problems = append(problems, fmt.Sprintf("%s: applied index %d past the end of its log, %d", n.name, applied, last))
	}
	what := n.name + " restarted: state as it stopped"
	if n.crashed {
		what = n.name + " restarted after a crash: journal a prefix of the one it had, no acknowledged append or granted vote lost"
		if !isPrefix(j, n.before) {
			problems = append(problems, fmt.Sprintf("%s: journal %v is not a prefix of %v", n.name, j, n.before))
		}
		problems = append(problems, durableAcks(n.name, n.sends, last, hs)...)
	} else if !slices.Equal(j, n.before) || applied != n.appliedIdx || sum != n.sum {
		problems = append(problems, fmt.Sprintf("%s: applied %d sum %x journal %v, stopped with %d %x %v", n.name, applied, sum, j, n.appliedIdx, n.sum, n.before))
	}
	if _, ok := sc.args["ahead"]; ok {
		what += "; its log ahead of what it applied"
		if last <= applied {
			problems = append(problems, fmt.Sprintf("%s: log ends at %d, applied %d: nothing appended but not applied", n.name, last, applied))
		}
	}
	if len(problems) > 0 {
		return lines(what, problems) // left down: Raft would rightly panic on a log that lost entries
	}
	var peers []uint64
	if n.replica <= uint64(len(c.peers)) {
		peers = c.peers
	}
	c.up(n, true, peers)
	return what
}

// durableAcks checks that a crashed node's store kept what it told others:
// the last append it acknowledged (unless a later leader's append replaced
// it, which the hard state's term shows) and the last vote it granted.
func durableAcks(name string, sends []event, last uint64, hs raftpb.HardState) []string {
	var problems []string
	var app, vote *raftpb.Message
	for i := range sends {
		m := &sends[i].msg
		switch {
		case m.Type == raftpb.MsgAppResp && !m.Reject:
			app = m
		case m.Type == raftpb.MsgVoteResp && !m.Reject:
			vote = m
		}
	}
	if app != nil && last < app.Index && hs.Term <= app.Term {
		problems = append(problems, fmt.Sprintf("%s acknowledged index %d in term %d, its log ends at %d in term %d", name, app.Index, app.Term, last, hs.Term))
	}
	if vote != nil && (hs.Term < vote.Term || hs.Term == vote.Term && hs.Vote != vote.To) {
		problems = append(problems, fmt.Sprintf("%s granted its vote to %d in term %d, its hard state says %d in term %d", name, vote.To, vote.Term, hs.Vote, hs.Term))
	}
	return problems
}

// journalOf returns the journal in db.
func (c *icluster) journalOf(db *storage.DB) []jentry {
	c.t.Helper()
	j, err := readJournal(db.State(1))
	if err != nil {
		c.t.Fatal(err)
	}
	return j
}

// storeState returns the journal in db with the applied index and checksum
// of the state.
func (c *icluster) storeState(db *storage.DB) (j []jentry, applied, sum uint64) {
	c.t.Helper()
	applied, sum, err := db.Checksum(1)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.journalOf(db), applied, sum
}

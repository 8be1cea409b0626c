package multiraft

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/poll"
)

// isolate cuts a node (node=nX, or leader) off the network.
func (c *icluster) isolate(sc *scriptCase) string {
	name, what := sc.arg("node", ""), sc.arg("node", "")
	if _, ok := sc.args["leader"]; ok {
		name, what = c.leader().name, "the leader"
	}
	c.net.mu.Lock()
	c.net.down[name] = true
	c.net.mu.Unlock()
	return "isolated " + what
}

// drop makes the network drop a share of all messages (rate=0.3), from a
// seeded random source.
func (c *icluster) drop(sc *scriptCase) string {
	rate, err := strconv.ParseFloat(sc.arg("rate", "0"), 64)
	if err != nil {
		c.t.Fatal(err)
	}
	c.fmu.Lock()
	c.dropRate = rate
	c.fmu.Unlock()
	return fmt.Sprintf("dropping %.0f%% of messages", rate*100)
}

// holdCommit holds the commit index every message to node carries at the
// highest it has been told so far (or releases it): the node keeps
// appending and acknowledging entries it does not know are committed, so
// it does not apply them. A commit index that arrives late is something
// Raft allows; the messages are otherwise unchanged.
func (c *icluster) holdCommit(node string, hold bool) string {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	if !hold {
		delete(c.held, node)
		return node + " learns commit indexes again"
	}
	if l := c.findLeader(); l != nil && l.name == node {
		return node + " leads: holding its commit index back means nothing"
	}
	c.held[node] = c.seen[node]
	return node + " learns no new commit index"
}

// holdAcks keeps append acknowledgements from the leader (or lets them
// through again): it replicates new entries but cannot commit them.
func (c *icluster) holdAcks(hold bool) string {
	name := ""
	if hold {
		name = c.leader().name
	}
	c.fmu.Lock()
	c.deaf = name
	c.fmu.Unlock()
	if hold {
		return "the leader hears no append acknowledgements"
	}
	return "append acknowledgements flow again"
}

// awaitAppended waits until the leader's log holds at least uncommitted
// entries past what it applied, and every running node's log is as long.
func (c *icluster) awaitAppended(uncommitted uint64) string {
	lastOf := func(n *inode) uint64 {
		g, err := n.db.Group(1)
		if err != nil {
			c.t.Fatal(err)
		}
		last, _ := g.LastIndex()
		return last
	}
	l := c.leader()
	poll.Until(c.t, 10*time.Second, "followers appending the leader's log", func() error {
		want := lastOf(l)
		if applied := l.eng.Applied(1); want < applied+uncommitted {
			return fmt.Errorf("the leader's log ends at %d, %d past what it applied", want, want-applied)
		}
		for _, n := range c.running() {
			if got := lastOf(n); got < want {
				return fmt.Errorf("%s's log ends at %d, the leader's at %d", n.name, got, want)
			}
		}
		return nil
	})
	if uncommitted == 0 {
		return "every log as long as the leader's"
	}
	return fmt.Sprintf("every log as long as the leader's, %d or more entries uncommitted", uncommitted)
}

// filter is the network's fault hook.
func (c *icluster) filter(_, to string, m *raftpb.Message) bool {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	if c.dropRate > 0 && c.rng.Float64() < c.dropRate || m.Type == raftpb.MsgAppResp && to == c.deaf {
		return false
	}
	if held, ok := c.held[to]; ok && m.Commit > held {
		m.Commit = held
	}
	c.seen[to] = max(c.seen[to], m.Commit)
	return true
}

// transferLeader hands leadership from the leader to another voter and
// waits until another node leads.
func (c *icluster) transferLeader() string {
	old := c.leader()
	var to *inode
	for _, n := range c.running() {
		if n != old && !n.removed && n.replica <= uint64(len(c.peers)) {
			to = n
			break
		}
	}
	if err := old.eng.TransferLeader(context.Background(), 1, to.replica); err != nil {
		return err.Error()
	}
	poll.Until(c.t, 10*time.Second, "a new leader", func() bool {
		l := c.findLeader()
		return l != nil && l != old
	})
	return "leadership moved"
}

// lead makes the named node the leader, so that a script knows which nodes
// follow.
func (c *icluster) lead(name string) string {
	n := c.node(name)
	poll.Until(c.t, 10*time.Second, name+" leading", func() bool {
		l := c.findLeader()
		if l != nil && l != n {
			_ = l.eng.TransferLeader(context.Background(), 1, n.replica)
		}
		return l == n
	})
	return name + " leads"
}

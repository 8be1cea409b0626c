package multiraft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/transport"
)

// benchNet delivers Raft traffic between engines in one process, like network
// in harness_test.go but without the event recorder and fault hooks, which
// would grow without bound and serialise every send under load. Its map is
// complete before any engine starts and never changes, so sends take no lock.
type benchNet struct {
	engines map[string]*Engine
	batches atomic.Uint64 // SendRaft calls
	msgs    atomic.Uint64 // messages in them
}

type benchSender struct{ net *benchNet }

var (
	_ Sender    = benchSender{}
	_ Directory = benchDir(nil)
)

// SendRaft implements Sender. Step copies the messages into the receiver's
// inbox before it returns, so the caller may reuse msgs and no copy is made
// here (Raft never changes the entries they point to).
func (s benchSender) SendRaft(addr string, msgs []transport.GroupMessage) {
	s.net.batches.Add(1)
	s.net.msgs.Add(uint64(len(msgs)))
	if e := s.net.engines[addr]; e != nil {
		e.Step(msgs)
	}
}

// SendSnapshot implements Sender.
func (s benchSender) SendSnapshot(ctx context.Context, addr string, msg transport.GroupMessage, data func(io.Writer) error) error {
	e := s.net.engines[addr]
	if e == nil {
		return fmt.Errorf("no engine %s", addr)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(data(pw)) }()
	return e.HandleSnapshot(ctx, msg, pr)
}

// benchDir maps replica id i to node "n<i>" like staticDir, from names built
// once, so the benchmark does not count a fmt.Sprintf per message that the
// node's real directory (a cluster map lookup) does not make.
type benchDir []string

// AddrOf implements Directory.
func (d benchDir) AddrOf(replica uint64) (string, bool) {
	if replica == 0 || replica > uint64(len(d)) {
		return "", false
	}
	return d[replica-1], true
}

// benchCluster is a set of engines in one process, each on its own Pebble
// database on the real disk (fsync on), each holding a replica of groups
// 1..groups. engines[i] is node "n<i+1>" and replica i+1 of every group.
type benchCluster struct {
	tb      testing.TB
	net     *benchNet
	engines []*Engine
	dbs     []*storage.DB
	groups  int
}

// newBenchCluster starts nodes engines under dataDir with the production
// defaults (DefaultConfig) and opens groups 1..groups on each. It closes them
// when the test or benchmark ends.
func newBenchCluster(tb testing.TB, dataDir string, nodes, groups int) *benchCluster {
	tb.Helper()
	c := &benchCluster{tb: tb, net: &benchNet{engines: map[string]*Engine{}}, groups: groups}
	tb.Cleanup(c.close)
	dir := make(benchDir, nodes)
	for i := range dir {
		dir[i] = fmt.Sprintf("n%d", i+1)
	}
	for _, name := range dir {
		db, err := storage.Open(filepath.Join(dataDir, name), storage.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		c.dbs = append(c.dbs, db)
		cfg := DefaultConfig()
		cfg.DB, cfg.Sender, cfg.Directory = db, benchSender{net: c.net}, dir
		cfg.Applier = func(uint64) state.Applier { return counter{} }
		e, err := New(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		c.engines = append(c.engines, e)
		c.net.engines[name] = e
	}
	peers := make([]uint64, nodes)
	for i := range peers {
		peers[i] = uint64(i + 1)
	}
	for _, e := range c.engines {
		e.Start()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, e := range c.engines {
		for g := 1; g <= groups; g++ {
			if err := e.OpenGroup(ctx, uint64(g), uint64(i+1), peers); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return c
}

func (c *benchCluster) close() {
	for _, e := range c.engines {
		e.Close()
	}
	for _, db := range c.dbs {
		_ = db.Close()
	}
}

// leaderOf returns the index of the engine that leads group g, or -1.
func (c *benchCluster) leaderOf(g uint64) int {
	for i, e := range c.engines {
		if _, local := e.Leader(g); local {
			return i
		}
	}
	return -1
}

// elect makes engine (g-1) mod nodes campaign for group g, so leaders are
// spread round-robin, and waits until every group has a leader that every
// replica knows of. Groups whose election failed (a split vote, a timeout
// election racing the campaign) keep whichever leader Raft chose.
func (c *benchCluster) elect() {
	c.tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	campaigned := make([]time.Time, c.groups+1)
	for {
		pending := 0
		for g := 1; g <= c.groups; g++ {
			gid := uint64(g)
			if c.leaderKnown(gid) {
				continue
			}
			pending++
			want := c.engines[(g-1)%len(c.engines)]
			// A bootstrapped replica refuses to campaign until it has
			// applied the bootstrap membership entries.
			if want.Applied(gid) < uint64(len(c.engines)) || time.Since(campaigned[g]) < 2*time.Second {
				continue
			}
			if err := want.Campaign(ctx, gid); err != nil {
				c.tb.Fatalf("campaign group %d: %v", g, err)
			}
			campaigned[g] = time.Now()
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("%d of %d groups have no leader after 30 s", pending, c.groups)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// leaderKnown reports whether group g has a leader that every replica names.
func (c *benchCluster) leaderKnown(g uint64) bool {
	var lead uint64
	for _, e := range c.engines {
		l, _ := e.Leader(g)
		if l == 0 || (lead != 0 && l != lead) {
			return false
		}
		lead = l
	}
	return c.leaderOf(g) >= 0
}

// leadersPerEngine counts the groups each engine leads.
func (c *benchCluster) leadersPerEngine() []int {
	n := make([]int, len(c.engines))
	for g := 1; g <= c.groups; g++ {
		if i := c.leaderOf(uint64(g)); i >= 0 {
			n[i]++
		}
	}
	return n
}

// syncs returns the fsyncs of all databases so far.
func (c *benchCluster) syncs() uint64 { return c.sumDBs((*storage.DB).SyncCount) }

// commits counts the batches the engines committed to their stores.
func (c *benchCluster) commits() uint64 { return c.sumDBs((*storage.DB).CommitCount) }

// sumDBs adds up one counter over every engine's database.
func (c *benchCluster) sumDBs(count func(*storage.DB) uint64) uint64 {
	var n uint64
	for _, db := range c.dbs {
		n += count(db)
	}
	return n
}

// benchProposer proposes to one group through whichever engine leads it.
type benchProposer struct {
	c       *benchCluster
	group   uint64
	leader  int // index of the engine believed to lead the group
	retries int // attempts that failed and were retried
}

// propose replicates cmd under id, following NotLeaderError to the named
// leader and retrying timeouts with the same id, until it succeeds or 10 s
// pass.
func (p *benchProposer) propose(id, cmd []byte) error {
	var deadline time.Time
	for {
		_, err := p.c.engines[p.leader].Propose(context.Background(), p.group, id, cmd)
		if err == nil {
			return nil
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(10 * time.Second)
		} else if time.Now().After(deadline) {
			return fmt.Errorf("group %d: %w", p.group, err)
		}
		p.retries++
		var nl *NotLeaderError
		switch {
		case errors.As(err, &nl) && nl.Leader != 0 && int(nl.Leader) <= len(p.c.engines) && int(nl.Leader)-1 != p.leader:
			p.leader = int(nl.Leader) - 1 // named leader: retry there at once
			continue
		case errors.As(err, &nl):
			if i := p.c.leaderOf(p.group); i >= 0 {
				p.leader = i
			}
		case errs.Is(err, errs.Timeout):
		default:
			return fmt.Errorf("group %d: %w", p.group, err)
		}
		time.Sleep(time.Millisecond)
	}
}

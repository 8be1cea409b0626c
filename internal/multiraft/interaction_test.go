package multiraft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/storage"
)

// TestInteraction runs the scripts in testdata/interaction: engines on
// crash-simulating in-memory file systems driven through leader changes,
// dropped messages, snapshots, membership changes and restarts between
// append and apply, checking after each what a client relies on (see
// check, restart and checkJournal). Run with -rewrite to record new
// expected outputs.
func TestInteraction(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "interaction", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c := newICluster(t)
			runScript(t, f, c.run)
		})
	}
}

// icluster is the world of one script: nodes n1, n2... each an engine over
// its own crashable in-memory file system, all holding group 1 (replica i
// on node ni); a network that can cut nodes off, drop messages and hold
// back commit indexes; and the writes clients made and were told applied.
type icluster struct {
	t          *testing.T
	net        *network
	compaction uint64
	peers      []uint64 // the voters the group was bootstrapped with

	mu      sync.Mutex
	nodes   map[string]*inode
	acked   map[string]uint64 // write -> the sequence number its client was told
	writes  int               // writes started
	pending sync.WaitGroup    // writes started by propose-async
	failed  []string          // async writes that gave up

	fmu      sync.Mutex // guards the message faults
	dropRate float64
	rng      *rand.Rand
	held     map[string]uint64 // node -> commit index its messages are held at
	seen     map[string]uint64 // node -> highest commit index delivered to it
	deaf     string            // node that hears no append acknowledgements
}

// inode is one node of an icluster.
type inode struct {
	name    string
	replica uint64
	fs      *syncTrap
	db      *storage.DB // nil while down
	eng     *Engine     // nil while down
	removed bool
	// What a restart is checked against: the journal when the node went
	// down, and whether it crashed (else it stopped cleanly, and its
	// checksum and applied index must come back as they were).
	before     []jentry
	crashed    bool
	sum        uint64
	appliedIdx uint64
	sends      []event // messages it sent before it went down
	// trapped is closed when an armed crash at a sync (crash-at-sync)
	// happened, with clone and sends set.
	trapped chan struct{}
	clone   *vfs.MemFS
}

func newICluster(t *testing.T) *icluster {
	c := &icluster{
		t:     t,
		net:   &network{engines: map[string]*Engine{}, rec: &recorder{}, down: map[string]bool{}},
		nodes: map[string]*inode{},
		acked: map[string]uint64{},
		rng:   rand.New(rand.NewPCG(1, 2)),
		held:  map[string]uint64{},
		seen:  map[string]uint64{},
	}
	c.net.filter = c.filter
	t.Cleanup(func() {
		c.pending.Wait()
		for _, n := range c.nodes {
			c.down(n)
		}
	})
	return c
}

// run runs one script command and returns its output.
func (c *icluster) run(sc *scriptCase) string {
	c.t.Helper()
	switch sc.cmd {
	case "start":
		return c.start(atoi(c.t, sc.arg("nodes", "3")), uint64(atoi(c.t, sc.arg("compaction", "0"))))
	case "propose":
		return c.propose(atoi(c.t, sc.arg("writes", "1")))
	case "propose-async":
		return c.proposeAsync(atoi(c.t, sc.arg("writes", "1")))
	case "wait":
		return c.wait()
	case "isolate":
		return c.isolate(sc)
	case "heal":
		c.net.mu.Lock()
		clear(c.net.down)
		c.net.mu.Unlock()
		return "healed"
	case "drop":
		return c.drop(sc)
	case "hold-commit":
		return c.holdCommit(sc.arg("node", ""), true)
	case "release-commit":
		return c.holdCommit(sc.arg("node", ""), false)
	case "hold-acks":
		return c.holdAcks(true)
	case "release-acks":
		return c.holdAcks(false)
	case "await-appended":
		return c.awaitAppended(uint64(atoi(c.t, sc.arg("uncommitted", "0"))))
	case "transfer-leader":
		return c.transferLeader()
	case "lead":
		return c.lead(sc.arg("node", ""))
	case "stop", "crash":
		return c.stop(c.node(sc.arg("node", "")), sc.cmd == "crash")
	case "crash-all":
		var out []string
		for _, n := range c.running() {
			out = append(out, c.stop(n, true))
		}
		return lines("", out)
	case "crash-at-sync":
		return c.crashAtSync(c.node(sc.arg("node", "")))
	case "await-crash":
		return c.awaitCrash(c.node(sc.arg("node", "")))
	case "restart":
		return c.restart(c.node(sc.arg("node", "")), sc)
	case "restart-all":
		var out []string
		for _, name := range c.names() {
			if n := c.node(name); n.eng == nil && !n.removed {
				out = append(out, c.restart(n, sc))
			}
		}
		return lines("", out)
	case "add", "promote", "remove":
		return c.confChange(sc.cmd, sc.arg("node", ""))
	case "check":
		return c.check()
	}
	c.t.Fatalf("line %d: unknown command %q", sc.line, sc.cmd)
	return ""
}

// start bootstraps group 1 on nodes n1..nN.
func (c *icluster) start(nodes int, compaction uint64) string {
	c.compaction = compaction
	for i := 1; i <= nodes; i++ {
		c.peers = append(c.peers, uint64(i))
	}
	for i := 1; i <= nodes; i++ {
		n := &inode{name: fmt.Sprintf("n%d", i), replica: uint64(i), fs: &syncTrap{MemFS: vfs.NewCrashableMem()}}
		c.mu.Lock()
		c.nodes[n.name] = n
		c.mu.Unlock()
		c.up(n, true, c.peers)
	}
	c.leader()
	return fmt.Sprintf("%d nodes, a leader elected", nodes)
}

// up opens n's store and starts its engine; with open, it opens group 1,
// bootstrapped with peers when the store is empty (without, the replica is
// made by the leader's first message).
func (c *icluster) up(n *inode, open bool, peers []uint64) {
	c.t.Helper()
	db, err := storage.Open("db", storage.Options{FS: n.fs.fs()})
	if err != nil {
		c.t.Fatalf("%s: open store: %v", n.name, err)
	}
	cfg := DefaultConfig()
	cfg.DB, cfg.Sender, cfg.Directory = db, &netSender{net: c.net, from: n.name}, staticDir{}
	cfg.Applier = func(uint64) state.Applier { return journal{} }
	cfg.TickInterval, cfg.ElectionTicks = 5*time.Millisecond, 10
	cfg.ReadRetry, cfg.ProposalAttempt = 100*time.Millisecond, 500*time.Millisecond
	if c.compaction > 0 {
		cfg.CompactionThreshold = c.compaction
	}
	cfg.Accept = func(group, _ uint64) bool { return group == 1 }
	e, err := New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	e.Start()
	if open {
		if err := e.OpenGroup(context.Background(), 1, n.replica, peers); err != nil {
			c.t.Fatalf("%s: open group: %v", n.name, err)
		}
	}
	c.mu.Lock()
	n.db, n.eng = db, e
	c.mu.Unlock()
	c.net.mu.Lock()
	c.net.engines[n.name] = e
	c.net.mu.Unlock()
}

// down stops n's engine and closes its store.
func (c *icluster) down(n *inode) {
	c.net.mu.Lock()
	delete(c.net.engines, n.name)
	c.net.mu.Unlock()
	c.mu.Lock()
	e, db := n.eng, n.db
	n.eng, n.db = nil, nil
	c.mu.Unlock()
	if e != nil {
		e.Close()
	}
	if db != nil {
		db.Close()
	}
}

// leader waits for a node that leads group 1 and is not cut off.
func (c *icluster) leader() *inode {
	c.t.Helper()
	var l *inode
	poll.Until(c.t, 10*time.Second, "a leader", func() bool {
		l = c.findLeader()
		return l != nil
	})
	return l
}

// findLeader returns a running node that leads group 1 and is not cut off,
// or nil.
func (c *icluster) findLeader() *inode {
	c.mu.Lock()
	engines := map[*inode]*Engine{}
	for _, n := range c.nodes {
		if n.eng != nil {
			engines[n] = n.eng
		}
	}
	c.mu.Unlock()
	for n, e := range engines {
		c.net.mu.Lock()
		cut := c.net.down[n.name]
		c.net.mu.Unlock()
		if _, local := e.Leader(1); local && !cut {
			return n
		}
	}
	return nil
}

// write proposes a write until it is acknowledged, through whichever node
// leads, always with the same proposal id (as the router retries).
func (c *icluster) write(ctx context.Context, w string) error {
	id := append([]byte("p"), w...)
	for {
		if e := c.engineOf(c.findLeader()); e != nil {
			res, err := e.Propose(ctx, 1, id, []byte(w))
			if err == nil {
				c.mu.Lock()
				c.acked[w] = binary.BigEndian.Uint64(res)
				c.mu.Unlock()
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not acknowledged: %w", w, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// engineOf returns n's engine, nil when n is nil or down.
func (c *icluster) engineOf(n *inode) *Engine {
	if n == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return n.eng
}

// nextWrite names a new write.
func (c *icluster) nextWrite() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	return "w" + strconv.Itoa(c.writes)
}

func (c *icluster) propose(count int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range count {
		if err := c.write(ctx, c.nextWrite()); err != nil {
			return err.Error()
		}
	}
	return fmt.Sprintf("%d acknowledged", count)
}

// proposeAsync starts count writes at once, each retried until
// acknowledged; wait collects them.
func (c *icluster) proposeAsync(count int) string {
	for range count {
		w := c.nextWrite()
		c.pending.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := c.write(ctx, w); err != nil {
				c.mu.Lock()
				c.failed = append(c.failed, err.Error())
				c.mu.Unlock()
			}
		})
	}
	return fmt.Sprintf("%d writes in flight", count)
}

func (c *icluster) wait() string {
	c.pending.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	failed := c.failed
	c.failed = nil
	slices.Sort(failed)
	return lines(fmt.Sprintf("all %d writes acknowledged", len(c.acked)), failed)
}

// confChange adds node as a learner (a new node: its replica is created by
// the leader's first message), promotes it to voter, or removes it.
func (c *icluster) confChange(op, name string) string {
	var n *inode
	cc := raftpb.ConfChangeSingle{}
	switch op {
	case "add":
		replica, err := strconv.ParseUint(name[1:], 10, 64)
		if err != nil {
			c.t.Fatal(err)
		}
		n = &inode{name: name, replica: replica, fs: &syncTrap{MemFS: vfs.NewCrashableMem()}}
		c.mu.Lock()
		c.nodes[name] = n
		c.mu.Unlock()
		c.up(n, false, nil)
		cc.Type = raftpb.ConfChangeAddLearnerNode
	case "promote":
		n, cc.Type = c.node(name), raftpb.ConfChangeAddNode
	case "remove":
		n, cc.Type = c.node(name), raftpb.ConfChangeRemoveNode
	}
	cc.NodeID = n.replica
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		l := c.leader()
		err := l.eng.ProposeConfChange(ctx, 1, raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{cc}})
		var nl *NotLeaderError
		if err == nil {
			break
		}
		if !errors.As(err, &nl) || ctx.Err() != nil {
			return fmt.Sprintf("%s %s: %v", op, name, err)
		}
	}
	if op == "remove" {
		c.mu.Lock()
		n.removed = true
		c.mu.Unlock()
	}
	return map[string]string{"add": name + " added as a learner", "promote": name + " promoted to voter", "remove": name + " removed"}[op]
}

// check waits until every running member not cut off has applied what the
// leader has, then checks each one's journal and log (checkJournal,
// checkLog) and that they all hold the same journal.
func (c *icluster) check() string {
	l := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.eng.ReadIndex(ctx, 1); err != nil {
		return "leader read index: " + err.Error()
	}
	target := l.eng.Applied(1)
	c.mu.Lock()
	acked := maps.Clone(c.acked)
	c.mu.Unlock()
	var problems []string
	var ref []jentry
	members := 0
	for _, n := range c.running() {
		c.net.mu.Lock()
		cut := c.net.down[n.name]
		c.net.mu.Unlock()
		if n.removed || cut {
			continue
		}
		members++
		poll.Until(c.t, 10*time.Second, n.name+" catching up", func() bool { return n.eng.Applied(1) >= target })
		j := c.journalOf(n.db)
		for _, p := range append(checkJournal(j, acked), checkLog(n.db, j)...) {
			problems = append(problems, n.name+": "+p)
		}
		if ref == nil {
			ref = j
		} else if !slices.Equal(j, ref) {
			problems = append(problems, fmt.Sprintf("%s: journal %v differs from %v", n.name, j, ref))
		}
	}
	return lines(fmt.Sprintf("%d replicas agree: %d writes, each applied once, in log order; all %d acknowledged present", members, len(ref), len(acked)), problems)
}

// node returns the named node.
func (c *icluster) node(name string) *inode {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[name]
	if n == nil {
		c.t.Fatalf("no node %q", name)
	}
	return n
}

// names returns the nodes' names in order.
func (c *icluster) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedKeys(c.nodes)
}

// running returns the nodes whose engine runs, in name order.
func (c *icluster) running() []*inode {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*inode
	for _, name := range sortedKeys(c.nodes) {
		if n := c.nodes[name]; n.eng != nil {
			out = append(out, n)
		}
	}
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// Package testcluster starts in-process Parley clusters for tests, built with
// the same constructors as `parley serve`, with hooks to kill, restart and
// partition nodes.
package testcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/node"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// Options shape a test cluster.
type Options struct {
	// Nodes is how many nodes to start (default 3).
	Nodes int
	// Partitions is P (default 4).
	Partitions int
	// ReplicationFactor is RF (default 3).
	ReplicationFactor int
	// Tick is the Raft tick (default 10ms; election timeout 10 ticks).
	Tick time.Duration
	// NoSync skips fsync for speed where durability is not under test.
	NoSync bool
	// CrashableFS keeps every node's store on its own crashable in-memory
	// file system, so Crash can drop what was not fsynced.
	CrashableFS bool
	// Configure, if set, edits each node's config before it starts.
	Configure func(i int, cfg *config.Config)
	// FS, if set, is called at every start of node i and the node keeps its
	// store on the file system it returns (return the same one to keep the
	// node's data across restarts). It overrides CrashableFS.
	FS func(i int) vfs.FS
	// Logger, if set, gives the logger of the node with the given id at
	// every start; by default nodes log into the cluster's ring of recent
	// lines (shown when the cluster fails to converge), and to stderr too
	// when PARLEY_TEST_LOG is set.
	Logger func(id string) *slog.Logger
}

// Cluster is a running in-process cluster.
type Cluster struct {
	t    testing.TB
	opts Options
	dir  string

	mu    sync.Mutex
	nodes []*node.Node
	cfgs  []config.Config
	fss   []*vfs.MemFS
	token string // session of the test user every Client signs in as
	// joinToken is the cluster's first join token, from the node that
	// created it.
	joinToken string
	signInMu  sync.Mutex // one sign-in at a time
	logs      logRing    // the nodes' last log lines, for failure reports
}

// TestUser and TestPassword are the account Client signs in with; it is
// registered the first time a Client is asked for.
const (
	TestUser     = "tester"
	TestPassword = "correct horse battery"
)

// New starts a cluster: node 0 creates it, the others join one at a time,
// and New returns once every partition has its full replica set.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.Partitions == 0 {
		opts.Partitions = 4
	}
	if opts.ReplicationFactor == 0 {
		opts.ReplicationFactor = 3
	}
	if opts.Tick == 0 {
		opts.Tick = 10 * time.Millisecond
	}
	c := &Cluster{t: t, opts: opts, dir: t.TempDir()}
	t.Cleanup(c.Close)
	for i := 0; i < opts.Nodes; i++ {
		c.AddNode()
	}
	c.WaitConverged(30 * time.Second)
	return c
}

// tokenVia returns the test user's session token, registering and signing
// in the first time (through node i, or any running node), so a test that
// never asks for a Client leaves the cluster without users.
func (c *Cluster) tokenVia(i int) string {
	c.t.Helper()
	c.signInMu.Lock()
	defer c.signInMu.Unlock()
	c.mu.Lock()
	token := c.token
	addrs := []string{c.cfgs[i].HTTPAddr}
	for j, n := range c.nodes {
		if n != nil && j != i {
			addrs = append(addrs, c.cfgs[j].HTTPAddr)
		}
	}
	c.mu.Unlock()
	if token != "" {
		return token
	}
	var err error
	for _, addr := range addrs {
		if token, err = signIn(addr); err == nil {
			c.mu.Lock()
			c.token = token
			c.mu.Unlock()
			return token
		}
	}
	c.t.Fatalf("sign in the test user: %v", err)
	return ""
}

// signIn registers the test user through addr and returns a session token.
func signIn(addr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := client.New("http://" + addr)
	if _, err := cl.Register(ctx, TestUser, TestPassword); err != nil {
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != 409 {
			return "", fmt.Errorf("register: %w", err)
		}
	}
	s, err := cl.Login(ctx, TestUser, TestPassword)
	if err != nil {
		return "", fmt.Errorf("login: %w", err)
	}
	return s.Token, nil
}

// AddNode starts one more node (joining node 0, or creating the cluster if
// it is the first) and returns its index.
func (c *Cluster) AddNode() int {
	c.t.Helper()
	c.mu.Lock()
	i := len(c.nodes)
	cfg := config.Default()
	cfg.ID = fmt.Sprintf("n%d", i+1)
	cfg.DataDir = filepath.Join(c.dir, cfg.ID)
	cfg.HTTPAddr = FreeAddr(c.t)
	cfg.ClusterAddr = FreeAddr(c.t)
	cfg.GossipAddr = FreeAddr(c.t)
	cfg.Partitions = c.opts.Partitions
	cfg.ReplicationFactor = c.opts.ReplicationFactor
	cfg.TickInterval = c.opts.Tick
	cfg.NoSync = c.opts.NoSync
	if i > 0 {
		cfg.Join = []string{c.cfgs[0].ClusterAddr}
		cfg.JoinToken = c.joinToken
	}
	cfg.RateLimit, cfg.Limits = GenerousLimits()
	if c.opts.Configure != nil {
		c.opts.Configure(i, &cfg)
	}
	c.cfgs = append(c.cfgs, cfg)
	c.nodes = append(c.nodes, nil)
	if c.opts.CrashableFS {
		c.fss = append(c.fss, vfs.NewCrashableMem())
	} else {
		c.fss = append(c.fss, nil)
	}
	c.mu.Unlock()
	c.start(i)
	return i
}

// GenerousLimits are the limits a test cluster's nodes start with: still
// on, so every request goes through the cluster-wide limiter, but a
// thousand times the defaults, so tests that sign in, post, create and
// stream fast as one user never meet them. A test of the limits sets its
// own in Options.Configure.
func GenerousLimits() (loginsPerAddress int, l config.Limits) {
	const k = 1000
	l = config.DefaultLimits()
	for _, r := range []*ratelimit.Rate{&l.Posts, &l.QueueSends, &l.RoomCreates, &l.QueueCreates, &l.LinkCreates, &l.LoginsPerUser, &l.Searches} {
		r.N *= k
	}
	l.Streams *= k
	l.LongPolls *= k
	return config.Default().RateLimit * k, l
}

func (c *Cluster) start(i int) {
	c.t.Helper()
	if err := c.startErr(i); err != nil {
		c.t.Fatal(err)
	}
}

// startErr starts node i, returning why it could not start.
func (c *Cluster) startErr(i int) error {
	c.mu.Lock()
	cfg := c.cfgs[i]
	opts := []node.Option{node.WithPasswordParams(passwordtest.Params())}
	if c.fss[i] != nil {
		opts = append(opts, node.WithFS(c.fss[i]))
	}
	if c.opts.FS != nil {
		opts = append(opts, node.WithFS(c.opts.FS(i)))
	}
	c.mu.Unlock()
	log := c.logger(cfg.ID)
	if c.opts.Logger != nil {
		log = c.opts.Logger(cfg.ID)
	}
	n, err := node.New(cfg, log, opts...)
	if err != nil {
		return fmt.Errorf("node %s: %w", cfg.ID, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		return fmt.Errorf("start node %s: %w", cfg.ID, err)
	}
	c.mu.Lock()
	c.nodes[i] = n
	if c.joinToken == "" {
		c.joinToken = n.JoinToken()
	}
	c.mu.Unlock()
	return nil
}

// FreeAddr returns a loopback address with a port free right now. Ports
// come from below the kernel's ephemeral range (32768 and up on Linux), so
// that the many outgoing connections of a test run, which take ephemeral
// ports, cannot grab one between this check and the node's listen; each
// process starts at a random point of the range and claims each port it
// hands out for its lifetime (claimPort), so parallel test binaries never
// hand out the same port.
func FreeAddr(t testing.TB) string {
	t.Helper()
	for range (freeHi - freeLo) / 2 {
		// Even offsets only: the port after each one stays free for a node
		// that gossips on its cluster port + 1.
		port := freeLo + (freePort.Add(2) % (freeHi - freeLo))
		if !claimPort(port) {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		return addr
	}
	t.Fatal("no free loopback port between 20000 and 32000")
	return ""
}

// The ports FreeAddr hands out: [freeLo, freeHi), from a per-process random
// start.
const freeLo, freeHi = 20000, 32000

var freePort = func() *atomic.Uint32 {
	var p atomic.Uint32
	p.Store(uint32(rand.IntN(freeHi-freeLo)) &^ 1)
	return &p
}()

// Len returns the number of nodes (running or not).
func (c *Cluster) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.nodes)
}

// Node returns node i, nil while it is stopped.
func (c *Cluster) Node(i int) *node.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// Client returns an API client talking to node i, signed in as TestUser.
func (c *Cluster) Client(i int) *client.Client {
	token := c.tokenVia(i)
	c.mu.Lock()
	defer c.mu.Unlock()
	return client.New("http://"+c.cfgs[i].HTTPAddr, client.WithToken(token))
}

// Kill stops node i abruptly (no leadership hand-over). Its data stays.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	n := c.nodes[i]
	c.nodes[i] = nil
	c.mu.Unlock()
	if n != nil {
		n.Close()
	}
}

// Crash simulates a power loss on node i: its store keeps exactly what was
// fsynced at this instant, then the node stops. Needs Options.CrashableFS.
func (c *Cluster) Crash(i int) {
	c.t.Helper()
	c.mu.Lock()
	fs := c.fss[i]
	if fs == nil {
		c.mu.Unlock()
		c.t.Fatal("Crash needs Options.CrashableFS")
	}
	c.fss[i] = fs.CrashClone(vfs.CrashCloneCfg{})
	c.mu.Unlock()
	c.Kill(i)
}

// CrashAll crashes every running node at the same instant.
func (c *Cluster) CrashAll() {
	c.t.Helper()
	c.mu.Lock()
	for i, fs := range c.fss {
		if fs == nil {
			c.mu.Unlock()
			c.t.Fatal("CrashAll needs Options.CrashableFS")
		}
		c.fss[i] = fs.CrashClone(vfs.CrashCloneCfg{})
	}
	c.mu.Unlock()
	for i := range c.fss {
		c.Kill(i)
	}
}

// Restart starts a killed node again from its data directory.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	// A node with data resumes; it needs no --join.
	if err := c.RestartEdited(i, func(cfg *config.Config) { cfg.Join = nil }); err != nil {
		c.t.Fatal(err)
	}
}

// RestartEdited starts a killed node again from its data directory with
// edit applied to its configuration (kept for later restarts), and returns
// why it could not start. edit runs under the cluster's lock: it must not
// call the Cluster's methods.
func (c *Cluster) RestartEdited(i int, edit func(*config.Config)) error {
	c.mu.Lock()
	edit(&c.cfgs[i])
	c.mu.Unlock()
	return c.startErr(i)
}

// DataDir returns node i's data directory.
func (c *Cluster) DataDir(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfgs[i].DataDir
}

// Isolate cuts node i off from every other node, both directions.
func (c *Cluster) Isolate(i int) {
	c.forEachPair(i, func(self, other *node.Node) {
		self.Transport().Faults().Isolate(other.ClusterAddr())
		other.Transport().Faults().Isolate(self.ClusterAddr())
	})
}

// Heal reconnects node i with every other node.
func (c *Cluster) Heal(i int) {
	c.forEachPair(i, func(self, other *node.Node) {
		self.Transport().Faults().Heal(other.ClusterAddr())
		other.Transport().Faults().Heal(self.ClusterAddr())
	})
}

func (c *Cluster) forEachPair(i int, fn func(self, other *node.Node)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	self := c.nodes[i]
	if self == nil {
		return
	}
	for j, o := range c.nodes {
		if j != i && o != nil {
			fn(self, o)
		}
	}
}

// LeaderOf returns the index of the node whose replica leads group g, or -1.
func (c *Cluster) LeaderOf(g uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range c.nodes {
		if n == nil {
			continue
		}
		if _, local := n.Engine().Leader(g); local {
			return i
		}
	}
	return -1
}

// WaitConverged waits until the map gives every partition min(RF, nodes)
// replicas and every running replica in the map is a voter or learner as the
// map says, with a leader for every group.
func (c *Cluster) WaitConverged(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := c.Converged()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("cluster did not converge in %v: %v\n%s%s", timeout, err, c.raftReport(), c.placementReport())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Converged reports why the cluster has not converged yet (nil once it
// has): the condition WaitConverged waits for, for tests that combine it
// with their own.
func (c *Cluster) Converged() error {
	nodes := c.nodesNow()
	var m *placement.Map
	running := 0
	for _, n := range nodes {
		if n != nil {
			running++
			if m == nil {
				m = n.Map()
			}
		}
	}
	if m == nil {
		return fmt.Errorf("no map yet")
	}
	want := min(m.ReplicationFactor, len(m.Nodes))
	for _, g := range m.Groups[1:] {
		if v := voters(g); v < want {
			return fmt.Errorf("partition %d has %d of %d voters (%s)", g.ID, v, want, replicaRoles(g))
		}
	}
	if v, want := voters(m.Groups[0]), min(m.MetaVoters, len(m.Nodes)); v < want {
		return fmt.Errorf("metadata group has %d of %d voters", v, want)
	}
	for _, g := range m.Groups {
		lead := c.LeaderOf(g.ID)
		if lead < 0 {
			return fmt.Errorf("group %d has no leader", g.ID)
		}
		st, ok, err := nodes[lead].Engine().GroupStatus(context.Background(), g.ID)
		if err != nil || !ok {
			return fmt.Errorf("group %d: status: %v", g.ID, err)
		}
		for _, r := range g.Replicas {
			if r.Role == placement.RoleVoter && !slices.Contains(st.ConfState.Voters, r.ID) {
				return fmt.Errorf("group %d: replica %d on %s not yet a voter", g.ID, r.ID, r.Node)
			}
			if r.Role == placement.RoleLearner && !slices.Contains(st.ConfState.Learners, r.ID) {
				return fmt.Errorf("group %d: replica %d on %s not yet a learner", g.ID, r.ID, r.Node)
			}
		}
		if n := len(st.ConfState.Voters) + len(st.ConfState.Learners); n != len(g.Replicas) {
			return fmt.Errorf("group %d: %d replicas in Raft, %d in the map", g.ID, n, len(g.Replicas))
		}
	}
	return nil
}

// nodesNow returns the cluster's nodes as they are now, nil where one is
// not running.
func (c *Cluster) nodesNow() []*node.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*node.Node(nil), c.nodes...)
}

// raftReport is every running node's view of its replicas, for a failure
// message: how far its map has got, and per group its role, term, commit,
// applied index, membership and, on a leader, each replica's progress.
func (c *Cluster) raftReport() string {
	nodes := c.nodesNow()
	var b strings.Builder
	for i, n := range nodes {
		if n == nil {
			continue
		}
		next := uint64(0)
		if m := n.Map(); m != nil {
			next = m.NextReplicaID
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		sts, err := n.Engine().Status(ctx)
		cancel()
		fmt.Fprintf(&b, "node %d (its map's next replica id %d):", i+1, next)
		if err != nil {
			fmt.Fprintf(&b, " status: %v\n", err)
			continue
		}
		b.WriteString("\n")
		for _, st := range sts {
			fmt.Fprintf(&b, "  group %d replica %d leader %d term %d commit %d applied %d voters %v learners %v",
				st.Group, st.Replica, st.Leader, st.Term, st.Commit, st.Applied, st.ConfState.Voters, st.ConfState.Learners)
			for _, id := range slices.Sorted(maps.Keys(st.Progress)) {
				pr := st.Progress[id]
				fmt.Fprintf(&b, " [%d match %d active %v]", id, pr.Match, pr.Active)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// replicaRoles shows g's replicas as the map has them: "n1:voter n3:learner".
func replicaRoles(g placement.Group) string {
	var out []string
	for _, r := range g.Replicas {
		out = append(out, r.Node+":"+r.Role)
	}
	return strings.Join(out, " ")
}

func voters(g placement.Group) int {
	n := 0
	for _, r := range g.Replicas {
		if r.Role == placement.RoleVoter {
			n++
		}
	}
	return n
}

// Close stops every node.
func (c *Cluster) Close() {
	c.mu.Lock()
	nodes := c.nodes
	c.nodes = make([]*node.Node, len(nodes))
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n != nil {
			wg.Add(1)
			go func() { defer wg.Done(); n.Close() }()
		}
	}
	wg.Wait()
}

// SetNetworkFaults makes every running node drop the given fraction of its
// outgoing Raft messages and delay the rest (0, 0 heals).
func (c *Cluster) SetNetworkFaults(dropRate float64, delay time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n != nil {
			n.Transport().Faults().SetDropRate(dropRate)
			n.Transport().Faults().SetDelay(delay)
		}
	}
}

// ClientWith returns an API client for node i, signed in as TestUser, with
// extra options.
func (c *Cluster) ClientWith(i int, opts ...client.Option) *client.Client {
	token := c.tokenVia(i)
	c.mu.Lock()
	defer c.mu.Unlock()
	return client.New("http://"+c.cfgs[i].HTTPAddr, append([]client.Option{client.WithToken(token)}, opts...)...)
}

// VerifyReplicas waits until every running replica of every group has
// applied the same index and then compares their state checksums: replicas
// of a deterministic state machine must be identical.
func (c *Cluster) VerifyReplicas(timeout time.Duration) {
	c.t.Helper()
	nodes := c.nodesNow()
	var groups []uint64
	for _, n := range nodes {
		if n != nil && n.Map() != nil {
			for _, g := range n.Map().Groups {
				groups = append(groups, g.ID)
			}
			break
		}
	}
	deadline := time.Now().Add(timeout)
	for _, g := range groups {
		for {
			err := checksumsAgree(nodes, g)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("group %d: %v", g, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func checksumsAgree(nodes []*node.Node, g uint64) error {
	type sum struct {
		node         string
		applied, sum uint64
	}
	var sums []sum
	for _, n := range nodes {
		if n == nil || !n.Engine().HasGroup(g) {
			continue
		}
		applied, s, err := n.DB().Checksum(g)
		if err != nil {
			return err
		}
		sums = append(sums, sum{n.ID(), applied, s})
	}
	for _, s := range sums[1:] {
		if s.applied != sums[0].applied {
			return fmt.Errorf("replicas at different applied indexes: %+v", sums)
		}
		if s.sum != sums[0].sum {
			return fmt.Errorf("replicas differ at applied index %d: %+v", s.applied, sums)
		}
	}
	return nil
}

// WaitLeadersBalanced waits until every partition has a leader and the
// running nodes lead within one partition of each other (leadership
// transfers settle after the cluster forms).
func (c *Cluster) WaitLeadersBalanced(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		counts, missing := c.leaderCounts()
		lo, hi := -1, 0
		for _, n := range counts {
			if lo < 0 || n < lo {
				lo = n
			}
			hi = max(hi, n)
		}
		if missing == 0 && hi-lo <= 1 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("leaders per node %v (%d partitions without a leader) after %v", counts, missing, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leaderCounts returns how many partitions each running node leads and how
// many partitions have no leader.
func (c *Cluster) leaderCounts() (map[int]int, int) {
	counts := map[int]int{}
	missing := 0
	c.mu.Lock()
	var m *placement.Map
	for i, n := range c.nodes {
		if n != nil {
			counts[i] = 0
			if m == nil {
				m = n.Map()
			}
		}
	}
	c.mu.Unlock()
	if m == nil {
		return counts, 1
	}
	for p := uint64(1); p <= uint64(m.Partitions); p++ {
		if l := c.LeaderOf(p); l >= 0 {
			counts[l]++
		} else {
			missing++
		}
	}
	return counts, missing
}

// Wipe deletes a stopped node's data directory and restarts it with --join,
// as an operator replacing a failed disk would: it joins as a new member
// (after the old one was removed: an id belongs to its certificate).
func (c *Cluster) Wipe(i int) {
	c.t.Helper()
	if err := c.WipeErr(i); err != nil {
		c.t.Fatal(err)
	}
}

// WipeErr is Wipe returning why the node could not start again.
func (c *Cluster) WipeErr(i int) error {
	c.mu.Lock()
	if c.nodes[i] != nil {
		c.mu.Unlock()
		return errors.New("Wipe needs a stopped node")
	}
	cfg := &c.cfgs[i]
	if err := os.RemoveAll(cfg.DataDir); err != nil {
		c.mu.Unlock()
		return err
	}
	if c.fss[i] != nil {
		c.fss[i] = vfs.NewCrashableMem()
	}
	join := 0
	if i == 0 {
		join = 1
	}
	cfg.Join = []string{c.cfgs[join].ClusterAddr}
	cfg.JoinToken = c.joinToken
	c.mu.Unlock()
	return c.startErr(i)
}

// JoinToken returns the cluster's first join token.
func (c *Cluster) JoinToken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.joinToken
}

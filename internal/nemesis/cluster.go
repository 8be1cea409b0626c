package nemesis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
)

// Options configure a Cluster.
type Options struct {
	// Nodes is the number of nodes (3 when 0).
	Nodes int
	// Partitions is the cluster's P (1 when 0: every domain key in one Raft
	// group, so "the leader" is one node).
	Partitions int
	// DiskBytes sizes each node's tmpfs data directory (1 GiB when 0).
	DiskBytes int64
	// Args are extra `parley serve` flags for every node.
	Args []string
	// Spare is a number of extra hosts on the network that run no node of
	// the cluster (see Cluster.Standalone).
	Spare int
	// FaultDisks puts each node's data directory on a fault-injecting FUSE
	// file system over its tmpfs (Node.DiskFault); it needs /dev/fuse
	// (FUSEAvailable). The data directory is then a mount point: Rebuild
	// and ReplaceData, which replace it, are not for such clusters.
	FaultDisks bool
}

// AdminUser and AdminPassword are the cluster's first user, an admin.
const (
	AdminUser     = "admin"
	AdminPassword = "correct horse battery"
)

// Cluster is a secure Parley cluster of real processes, one per namespace
// of its Net.
type Cluster struct {
	Net   *Net
	Nodes []*Node
	// JoinToken is the first node's join token.
	JoinToken string
	// AdminToken is a session of AdminUser.
	AdminToken string

	t      testing.TB
	dir    string
	bin    string
	others []*Node // nodes of other clusters on spare hosts
}

// NewCluster builds a network and starts a cluster on it: the first node
// creates it, the others join with its token (--join-token). Everything is
// torn down by t.Cleanup; when t failed the nodes' logs are kept under
// /tmp/parley-nemesis-logs.
func NewCluster(t testing.TB, o Options) *Cluster {
	t.Helper()
	o = o.withDefaults()
	nw := NewNet(t, o.Nodes+o.Spare)
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Net: nw, t: t, dir: t.TempDir(), bin: bin}
	t.Cleanup(func() { unmountRun(nw.Run) }) // before the temporary directory goes
	t.Cleanup(c.stopAll)
	for i, h := range nw.Hosts[:o.Nodes] {
		c.Nodes = append(c.Nodes, c.newNode(fmt.Sprintf("n%d", i+1), h, o))
	}
	start := time.Now()
	c.start()
	t.Logf("nemesis: run %d: %d nodes healthy in %v", nw.Run, len(c.Nodes), time.Since(start).Round(time.Millisecond))
	return c
}

// newNode prepares node id on host h: its tmpfs data directory and flags.
func (c *Cluster) newNode(id string, h *Host, o Options) *Node {
	c.t.Helper()
	n := &Node{ID: id, Host: h, bin: c.bin, LogPath: filepath.Join(c.dir, id+".log")}
	mnt := filepath.Join(c.dir, id)
	if err := mountTmpfs(fmt.Sprintf("%s-%s", h.NS, id), mnt, o.DiskBytes); err != nil {
		c.t.Fatal(err)
	}
	n.DataDir = filepath.Join(mnt, "data")
	if o.FaultDisks {
		if err := mountFaultDisk(n, mnt, fmt.Sprintf("%s-%s-faultfs", h.NS, id)); err != nil {
			c.t.Fatal(err)
		}
	}
	n.args = append([]string{"serve", "--id", n.ID, "--data-dir", n.DataDir,
		"--http", n.HTTPAddr(), "--cluster", n.ClusterAddr(),
		"--partitions", fmt.Sprint(o.Partitions)}, o.Args...)
	return n
}

// Standalone starts, on spare host h (a host number past the cluster's
// nodes), a node that creates a cluster of its own with its own CA, and
// waits until it is ready; extra flags follow its own. It is killed by
// t.Cleanup.
func (c *Cluster) Standalone(h int, id string, extra ...string) *Node {
	c.t.Helper()
	n := c.newNode(id, c.Net.host(h), Options{}.withDefaults())
	n.args = append(n.args, extra...)
	c.others = append(c.others, n)
	if err := n.start(nil); err != nil {
		c.t.Fatal(err)
	}
	c.WaitReady(n, time.Minute)
	return n
}

func (o Options) withDefaults() Options {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Partitions == 0 {
		o.Partitions = 1
	}
	if o.DiskBytes == 0 {
		o.DiskBytes = 1 << 30
	}
	return o
}

// start starts the first node, signs the admin up, then joins the others
// one by one and waits until every partition has all its replicas.
func (c *Cluster) start() {
	t := c.t
	t.Helper()
	first := c.Nodes[0]
	if err := first.start(nil); err != nil {
		t.Fatal(err)
	}
	c.WaitReady(first, time.Minute)
	b, err := os.ReadFile(filepath.Join(first.DataDir, "join-token"))
	if err != nil {
		t.Fatalf("the first node's join token: %v", err)
	}
	c.JoinToken = strings.TrimSpace(string(b))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := first.Client("")
	if _, err := admin.Register(ctx, AdminUser, AdminPassword); err != nil {
		t.Fatalf("sign the admin up: %v", err)
	}
	s, err := admin.Login(ctx, AdminUser, AdminPassword)
	if err != nil {
		t.Fatalf("sign the admin in: %v", err)
	}
	c.AdminToken = s.Token
	for _, n := range c.Nodes[1:] {
		// The token goes by environment, not on the command line where
		// any local user could read it.
		if err := c.startJoining(n, first); err != nil {
			t.Fatal(err)
		}
		c.WaitReady(n, time.Minute)
	}
	c.WaitHealthy(2 * time.Minute)
}

// Rebuild does what an operator does with a node whose data directory was
// refused as stale (or lost): it stops the node, moves its data directory
// away, removes the node from the cluster once the cluster sees it dead
// (parley cluster remove), and starts it on an empty data directory
// joining through another node, which gives it its replicas again.
func (c *Cluster) Rebuild(n *Node) error {
	n.Kill()
	if err := os.Rename(n.DataDir, n.DataDir+".stale"); err != nil {
		return err
	}
	via := c.Nodes[(c.index(n)+1)%len(c.Nodes)]
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := via.Client(c.AdminToken).RemoveNode(ctx, n.ID)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove %s: %w", n.ID, err)
		}
		time.Sleep(time.Second)
	}
	return c.startJoining(n, via)
}

// RebuildSelf restarts n, whose data directory is quarantined, with
// --rebuild-quarantined: the node sets the directory's contents aside and
// joins again through another node under its id; nothing is done for it.
func (c *Cluster) RebuildSelf(n *Node) error {
	n.Kill()
	return c.startJoining(n, c.Nodes[(c.index(n)+1)%len(c.Nodes)], "--rebuild-quarantined")
}

// startJoining starts n with the join token and --join via, then extra
// flags.
func (c *Cluster) startJoining(n, via *Node, extra ...string) error {
	return n.start([]string{"PARLEY_JOIN_TOKEN=" + c.JoinToken}, append([]string{"--join", via.ClusterAddr()}, extra...)...)
}

// stopAll kills every node; when the test failed, or
// PARLEY_NEMESIS_KEEP_LOGS is set, it keeps their logs.
func (c *Cluster) stopAll() {
	all := append(append([]*Node(nil), c.Nodes...), c.others...)
	for _, n := range all {
		n.Kill()
		if n.disk != nil {
			n.disk.stop()
		}
	}
	if !c.t.Failed() && os.Getenv("PARLEY_NEMESIS_KEEP_LOGS") == "" {
		return
	}
	keep := filepath.Join(os.TempDir(), "parley-nemesis-logs", fmt.Sprintf("%s-run%d", sanitize(c.t.Name()), c.Net.Run))
	if err := os.MkdirAll(keep, 0o755); err == nil {
		for _, n := range all {
			_, _ = run("cp", n.LogPath, keep)
		}
		c.t.Logf("nemesis: node logs kept in %s", keep)
	}
}

// sanitize makes a test name usable as a file name.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' {
			return '_'
		}
		return r
	}, s)
}

// Admin returns a client of node i (from 0) signed in as the admin.
func (c *Cluster) Admin(i int) *client.Client { return c.Nodes[i].Client(c.AdminToken) }

// WaitReady waits until n answers /readyz, failing t if not within d
// (the nodes' logs are kept when the test fails).
func (c *Cluster) WaitReady(n *Node, d time.Duration) {
	c.t.Helper()
	poll.Until(c.t, d, n.ID+" ready", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return n.Client("").Readyz(ctx)
	})
}

// WaitHealthy waits until every node is ready, the cluster status (seen
// from every node) lists each node alive, and every partition has a leader
// and a replica on each of min(3, nodes) nodes.
func (c *Cluster) WaitHealthy(d time.Duration) {
	c.t.Helper()
	poll.Until(c.t, d, "cluster healthy", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, n := range c.Nodes {
			if err := c.healthyFrom(ctx, n); err != nil {
				return fmt.Errorf("seen from %s: %w", n.ID, err)
			}
		}
		return nil
	})
}

// healthyFrom checks the cluster status as node n sees it.
func (c *Cluster) healthyFrom(ctx context.Context, n *Node) error {
	st, err := c.Admin(c.index(n)).Cluster(ctx)
	if err != nil {
		return err
	}
	for _, ns := range st.Nodes {
		if !ns.Alive() {
			return fmt.Errorf("node %s is %s", ns.ID, ns.State)
		}
	}
	if len(st.Nodes) != len(c.Nodes) {
		return fmt.Errorf("%d nodes listed, want %d", len(st.Nodes), len(c.Nodes))
	}
	want := min(3, len(c.Nodes))
	for _, p := range st.Partitions {
		if p.Leader == "" || len(p.Replicas) != want {
			return fmt.Errorf("partition %d: leader %q, %d replicas", p.ID, p.Leader, len(p.Replicas))
		}
	}
	return nil
}

// index returns n's position in c.Nodes.
func (c *Cluster) index(n *Node) int {
	for i, m := range c.Nodes {
		if m == n {
			return i
		}
	}
	panic("nemesis: node of another cluster")
}

// Leader returns the index (from 0) of the node leading partition p as
// node i's status says, -1 when there is none.
func (c *Cluster) Leader(i int, p uint64) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.Admin(i).Cluster(ctx)
	if err != nil {
		return -1
	}
	for _, ps := range st.Partitions {
		if ps.ID == p {
			for j, n := range c.Nodes {
				if n.ID == ps.Leader {
					return j
				}
			}
		}
	}
	return -1
}

// Verify asks the cluster, through node i, to compare every partition's
// replicas; it returns an error naming the mismatches or unverified ones.
func (c *Cluster) Verify(ctx context.Context, i int) error {
	r, err := c.Admin(i).Verify(ctx)
	if err != nil {
		return err
	}
	if r.Mismatches > 0 || r.Unverified > 0 {
		return fmt.Errorf("replicas differ: %d mismatched, %d unverified partitions: %+v", r.Mismatches, r.Unverified, r.Partitions)
	}
	return nil
}

// HealAll removes every network fault and resumes paused nodes.
func (c *Cluster) HealAll() error {
	errs := []error{c.Net.Heal(), c.Net.ClearNetFaults()}
	for _, n := range c.Nodes {
		n.mu.Lock()
		paused := n.paused
		n.mu.Unlock()
		if paused {
			errs = append(errs, n.Resume())
		}
	}
	return errors.Join(errs...)
}

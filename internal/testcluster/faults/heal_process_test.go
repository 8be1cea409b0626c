package faults_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/node"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// readJoinToken reads the join token the node that created a cluster wrote
// into its data directory.
func readJoinToken(t *testing.T, dataDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, node.JoinTokenFile))
	if err != nil {
		t.Fatalf("read the join token: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// clusterPort returns a loopback address whose port is free for TCP and
// whose next port is free for TCP and UDP: `parley serve` gossips on the
// cluster port plus one.
func clusterPort(t *testing.T) string {
	t.Helper()
	for range 100 {
		addr := testcluster.FreeAddr(t)
		host, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		next := net.JoinHostPort(host, strconv.Itoa(p+1))
		tl, err := net.Listen("tcp", next)
		if err != nil {
			continue
		}
		ul, err := net.ListenPacket("udp", next)
		_ = tl.Close()
		if err != nil {
			continue
		}
		_ = ul.Close()
		return addr
	}
	t.Fatal("no free pair of ports")
	return ""
}

// procCluster is a cluster of `parley serve` processes.
type procCluster struct {
	t       *testing.T
	bin     string
	dir     string
	procs   []*proc
	ids     []string
	mu      sync.Mutex
	down    map[int]bool // killed or stopped: left out of the load
	clients []*client.Client
	token   string
}

// startProcCluster starts n processes, RF 3, 8 partitions, one at a time.
func startProcCluster(t *testing.T, n int) *procCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("real-process test")
	}
	bin, err := buildParley()
	if err != nil {
		t.Fatal(err)
	}
	pc := &procCluster{t: t, bin: bin, dir: t.TempDir(), down: map[int]bool{}}
	for range n {
		pc.add()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	signup := client.New("http://" + pc.procs[0].http)
	if _, err := signup.Register(ctx, testcluster.TestUser, testcluster.TestPassword); err != nil {
		t.Fatal(err)
	}
	s, err := signup.Login(ctx, testcluster.TestUser, testcluster.TestPassword)
	if err != nil {
		t.Fatal(err)
	}
	pc.token = s.Token
	for _, p := range pc.procs {
		pc.clients = append(pc.clients, client.New("http://"+p.http, client.WithToken(pc.token)))
	}
	return pc
}

// add starts one more process, joining the first.
func (pc *procCluster) add() {
	t := pc.t
	i := len(pc.procs)
	id := fmt.Sprintf("n%d", i+1)
	httpAddr, clusterAddr := testcluster.FreeAddr(t), clusterPort(t)
	args := []string{"serve", "--id", id, "--data-dir", filepath.Join(pc.dir, id),
		"--http", httpAddr, "--cluster", clusterAddr, "--partitions", "8", "--tick", "20ms",
		"--dead-after", processDeadAfter.String(), "--rate-limit", "100000"}
	if i > 0 {
		args = append(args, "--join-token", readJoinToken(t, filepath.Join(pc.dir, "n1")), "--join", pc.procs[0].args[8])
	}
	logf, err := os.Create(filepath.Join(pc.dir, id+".log"))
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{args: args, http: httpAddr, log: logf}
	p.start(t, pc.bin)
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		p.kill9()
	})
	waitReady(t, client.New("http://"+httpAddr), 30*time.Second)
	pc.procs = append(pc.procs, p)
	pc.ids = append(pc.ids, id)
	if pc.token != "" {
		pc.mu.Lock()
		pc.clients = append(slices.Clone(pc.clients), client.New("http://"+httpAddr, client.WithToken(pc.token)))
		pc.mu.Unlock()
	}
}

// up returns the clients of the processes that are running.
func (pc *procCluster) up() []*client.Client {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var out []*client.Client
	for i, c := range pc.clients {
		if !pc.down[i] {
			out = append(out, c)
		}
	}
	return out
}

func (pc *procCluster) setDown(i int, down bool) {
	pc.mu.Lock()
	pc.down[i] = down
	pc.mu.Unlock()
}

func (pc *procCluster) signal(i int, sig syscall.Signal) {
	if err := pc.procs[i].cmd.Process.Signal(sig); err != nil {
		pc.t.Fatal(err)
	}
}

// status returns GET /api/v1/cluster through a running process.
func (pc *procCluster) status() (*client.ClusterStatus, error) {
	cls := pc.up()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cls[0].Cluster(ctx)
}

// placedOnly checks, through the cluster status, that every partition has
// three replicas on the given nodes, one leader and the rest followers.
func placedOnly(st *client.ClusterStatus, nodes []string) error {
	for _, p := range st.Partitions {
		if len(p.Replicas) != 3 {
			return fmt.Errorf("partition %d has %d replicas", p.ID, len(p.Replicas))
		}
		leaders := 0
		for _, r := range p.Replicas {
			if !slices.Contains(nodes, r.Node) {
				return fmt.Errorf("partition %d keeps a replica on %s", p.ID, r.Node)
			}
			switch r.Role {
			case "leader":
				leaders++
			case "follower":
			default:
				return fmt.Errorf("partition %d: replica on %s is %s", p.ID, r.Node, r.Role)
			}
		}
		if leaders != 1 {
			return fmt.Errorf("partition %d has %d leaders", p.ID, leaders)
		}
	}
	return nil
}

// waitPlacedOnly waits until placedOnly holds and returns how long it took.
func (pc *procCluster) waitPlacedOnly(nodes []string, within time.Duration) time.Duration {
	start := time.Now()
	poll.Until(pc.t, within, fmt.Sprintf("partitions fully replicated on %v", nodes), func() error {
		st, err := pc.status()
		if err != nil {
			return err
		}
		return placedOnly(st, nodes)
	})
	return time.Since(start)
}

// 5 processes, RF 3: one is killed with SIGKILL for good, then another.
// Each time every partition is back to three replicas on the survivors
// (the metadata group too: the second healing needs it), under linearizable
// load, losing nothing. A soak of minutes: it runs in the long form (and in
// .ci/run); TestHeal_DeadNodesReplicasRebuilt covers healing in process.
func TestHealProcess_Kill9TwiceRebuildsReplicas(t *testing.T) {
	skipUnlessLong(t)
	pc := startProcCluster(t, 5)
	load := startKVLoad(t, "k", 8, 40, pc.up)
	load.waitAcks(200, time.Minute)
	survivors := slices.Clone(pc.ids)
	for _, victim := range []int{4, 1} {
		// The victim holds its fair share when it dies.
		poll.Until(t, 2*time.Minute, "replicas and leaders balanced", func() error { return pc.balanced(survivors) })
		pc.setDown(victim, true)
		pc.procs[victim].kill9()
		killed := time.Now()
		survivors = slices.DeleteFunc(survivors, func(id string) bool { return id == pc.ids[victim] })
		pc.waitPlacedOnly(survivors, processDeadAfter+2*time.Minute)
		t.Logf("kill -9 %s: every partition back to 3 replicas on %v %v after the kill (--dead-after %v)",
			pc.ids[victim], survivors, time.Since(killed).Round(100*time.Millisecond), processDeadAfter)
		load.waitAcks(200, time.Minute)
	}
	load.stop(pc.up()[0])
	pc.verify()
}

// A process paused (SIGSTOP) for longer than dead-after loses its replicas
// to the others; resumed, it never answers a read with stale data, deletes
// its surplus replicas and gets a fair share back. A minute of real
// processes: it runs in the long form (and in .ci/run); the nemesis rows
// pause nodes past the election timeout under every workload.
func TestHealProcess_PausedBeyondDeadAfter(t *testing.T) {
	skipUnlessLong(t)
	pc := startProcCluster(t, 4)
	load := startKVLoad(t, "k", 8, 40, pc.up)
	load.waitAcks(200, time.Minute)
	const paused = 3
	poll.Until(t, 2*time.Minute, "replicas and leaders balanced", func() error { return pc.balanced(pc.ids) })
	pc.setDown(paused, true)
	pc.signal(paused, syscall.SIGSTOP)
	pc.waitPlacedOnly(pc.ids[:paused], processDeadAfter+2*time.Minute)
	load.waitAcks(200, time.Minute)
	pc.signal(paused, syscall.SIGCONT)
	pc.setDown(paused, false) // reads through it right away: checked for staleness
	// A write acknowledged elsewhere is visible through the resumed node.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ver, err := pc.clients[0].KVPut(ctx, "after-resume", []byte("fresh"), client.PutOptions{IdempotencyKey: "after-resume"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		v, gotVer, err := pc.clients[paused].KVGet(ctx, "after-resume", client.GetOptions{})
		if err == nil {
			if string(v) != "fresh" || gotVer != ver {
				t.Fatalf("read through the resumed node: %q v%d, want fresh v%d", v, gotVer, ver)
			}
			break
		}
		if !retryable(err) || ctx.Err() != nil {
			t.Fatalf("read through the resumed node: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	poll.Until(t, 2*time.Minute, "the resumed node holds only replicas the map gives it, and a fair share", func() error {
		st, err := pc.status()
		if err != nil {
			return err
		}
		if err := placedOnly(st, pc.ids); err != nil {
			return err
		}
		want := map[uint64]bool{}
		for _, p := range st.Partitions {
			for _, r := range p.Replicas {
				if r.Node == pc.ids[paused] {
					want[p.ID] = true
				}
			}
		}
		if len(want) < 8*3/4 {
			return fmt.Errorf("%s holds %d partition replicas", pc.ids[paused], len(want))
		}
		held, err := localGroups(pc.procs[paused].http)
		if err != nil {
			return err
		}
		for _, g := range held {
			if g != 0 && !want[g] {
				return fmt.Errorf("%s still holds a replica of partition %d", pc.ids[paused], g)
			}
		}
		return nil
	})
	load.waitAcks(200, time.Minute)
	load.stop(pc.up()[0])
	pc.verify()
}

// localGroups returns the groups a process holds a replica of, read from
// its /metrics (parley_partition_applied_index{group="N"}).
func localGroups(httpAddr string) ([]uint64, error) {
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, m := range groupMetric.FindAllStringSubmatch(string(b), -1) {
		g, _ := strconv.ParseUint(m[1], 10, 64)
		out = append(out, g)
	}
	return out, nil
}

var groupMetric = regexp.MustCompile(`(?m)^parley_partition_applied_index\{group="(\d+)"\}`)

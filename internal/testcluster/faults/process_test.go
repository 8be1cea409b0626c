package faults_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/testcluster"
)

// binDir is the temporary directory of the binary buildParley built, removed
// by TestMain when the tests end.
var binDir string

// TestMain runs the package's tests and removes what they built outside
// their own temporary directories (the parley binary, 30+ MB).
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildParley builds the parley binary once per test run.
var buildParley = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "parley-bin")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "parley")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/parley-chat/parley/cmd/parley").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// proc is one `parley serve` process.
type proc struct {
	args []string
	http string
	cmd  *exec.Cmd
	log  *os.File
}

func (p *proc) start(t *testing.T, bin string) {
	t.Helper()
	p.cmd = exec.Command(bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

func (p *proc) kill9() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

// term stops the process with SIGTERM, as systemd and Docker do, and fails
// the test when it has not exited within the time.
func (p *proc) term(t *testing.T, within time.Duration) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(within):
		t.Fatalf("%s did not exit within %v of SIGTERM", p.args[2], within)
	}
}

// waitReady waits until the node behind c is ready; when it is not within
// the time, the test fails with the tail of logs (the node's output).
func waitReady(t *testing.T, c *client.Client, within time.Duration, logs ...*os.File) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Readyz(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tail := ""
			for _, l := range logs {
				if b, rerr := os.ReadFile(l.Name()); rerr == nil {
					tail += "\n--- " + filepath.Base(l.Name()) + ":\n" + string(b[max(0, len(b)-4000):])
				}
			}
			t.Fatalf("node not ready after %v: %v%s", within, err, tail)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startProcs starts a cluster of n `parley serve` processes of bin, 8
// partitions each, in a temporary directory: n1 creates it, the others
// join it with its token (the last four arguments). Each is killed when the
// test ends; it returns once every one is ready.
func startProcs(t *testing.T, bin string, n int) []*proc {
	t.Helper()
	dir := t.TempDir()
	procs := make([]*proc, n)
	for i := range procs {
		id := fmt.Sprintf("n%d", i+1)
		httpAddr, clusterAddr := testcluster.FreeAddr(t), clusterPort(t)
		args := []string{"serve", "--id", id, "--data-dir", filepath.Join(dir, id),
			"--http", httpAddr, "--cluster", clusterAddr, "--partitions", "8", "--tick", "20ms"}
		if i > 0 {
			args = append(args, "--join-token", readJoinToken(t, filepath.Join(dir, "n1")), "--join", procs[0].args[8])
		}
		logf, err := os.Create(filepath.Join(dir, id+".log"))
		if err != nil {
			t.Fatal(err)
		}
		procs[i] = &proc{args: args, http: httpAddr, log: logf}
		procs[i].start(t, bin)
		t.Cleanup(procs[i].kill9)
		waitReady(t, client.New("http://"+httpAddr), 30*time.Second, logf)
	}
	return procs
}

// Three real processes take writes; one is killed with SIGKILL mid-stream and
// restarted from its data directory: it catches up, and every acknowledged
// write is readable from every node.
func TestProcess_Kill9AndRestartLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test")
	}
	bin, err := buildParley()
	if err != nil {
		t.Fatal(err)
	}
	procs := startProcs(t, bin, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	signup := client.New("http://" + procs[0].http)
	if _, err := signup.Register(ctx, "tester", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	session, err := signup.Login(ctx, "tester", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	clients := make([]*client.Client, 3)
	for i, p := range procs {
		clients[i] = client.New("http://"+p.http, client.WithToken(session.Token))
	}
	// The kill must find every partition on three voters: one still on
	// two (growing as the nodes joined) cannot lose either.
	testcluster.WaitReplicated(t, clients[0], time.Minute)

	var mu sync.Mutex
	acked := map[string]string{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key, val := fmt.Sprintf("w%d-%d", w, n), fmt.Sprintf("v%d", n)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := clients[(w+n)%3].KVPut(ctx, key, []byte(val), client.PutOptions{IdempotencyKey: key})
				cancel()
				if err == nil {
					mu.Lock()
					acked[key] = val
					mu.Unlock()
				}
			}
		}(w)
	}
	// Each phase lasts until enough writes were acknowledged in it, so a
	// slow machine still exercises writes around the kill and the restart.
	ackedAtLeast := func(n int, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			mu.Lock()
			got := len(acked)
			mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d writes acknowledged after %v, want %d", got, within, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ackedAtLeast(100, 30*time.Second)
	procs[1].kill9()
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	ackedAtLeast(before+100, 30*time.Second)             // the survivors keep a majority
	procs[1].args = procs[1].args[:len(procs[1].args)-2] // a restarted node needs no --join
	procs[1].start(t, bin)
	waitReady(t, clients[1], 30*time.Second, procs[1].log)
	mu.Lock()
	before = len(acked)
	mu.Unlock()
	ackedAtLeast(before+100, 30*time.Second)
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d acknowledged writes", len(acked))
	for i, c := range clients {
		for key, val := range acked {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			got, _, err := c.KVGet(ctx, key, client.GetOptions{})
			cancel()
			if err != nil || string(got) != val {
				t.Fatalf("n%d: %s = %q (%v), acknowledged %q", i+1, key, got, err, val)
			}
		}
	}
}

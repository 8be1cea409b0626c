//go:build upgrade

package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/compat"
)

// upgradeFrom returns the commit testdata/upgrade-from names.
func upgradeFrom(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "upgrade-from"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			return line
		}
	}
	t.Fatal("testdata/upgrade-from names no commit")
	return ""
}

// buildOldParley builds the parley binary of the commit testdata/upgrade-from
// names, from a temporary git worktree of this repository, and returns its
// path. It fails (does not skip) when the commit is not in the clone: a
// shallow clone cannot run the upgrade test.
func buildOldParley(t *testing.T) string {
	t.Helper()
	commit := upgradeFrom(t)
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v (the upgrade test builds an earlier commit of this repository with git worktree)", err)
	}
	repo := strings.TrimSpace(string(top))
	if out, err := exec.Command("git", "-C", repo, "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("commit %s (testdata/upgrade-from) is not in this clone (%v %s): fetch the full history", commit, err, out)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if out, err := exec.Command("git", "-C", repo, "worktree", "add", "--detach", src, commit).CombinedOutput(); err != nil {
		t.Fatalf("git worktree add: %v\n%s", err, out)
	}
	defer func() {
		if out, err := exec.Command("git", "-C", repo, "worktree", "remove", "--force", src).CombinedOutput(); err != nil {
			t.Logf("git worktree remove: %v\n%s", err, out)
		}
	}()
	bin := filepath.Join(dir, "parley-old")
	build := exec.Command("go", "build", "-o", bin, "./cmd/parley")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of %s: %v\n%s", commit, err, out)
	}
	return bin
}

// upgradeLoad writes to the cluster until stopped: KV puts and chat posts,
// each retried on other nodes with its idempotency key until acknowledged.
// It keeps what was acknowledged, and every error that is not retryable.
type upgradeLoad struct {
	clients []*client.Client
	room    string

	mu       sync.Mutex
	kv       map[string]string
	posts    map[string]bool
	failures []string

	stop chan struct{}
	wg   sync.WaitGroup
}

func (l *upgradeLoad) start(kvWorkers int) {
	l.stop = make(chan struct{})
	for w := range kvWorkers {
		l.wg.Go(func() {
			for n := 0; l.running(); n++ {
				key, val := fmt.Sprintf("w%d-%d", w, n), fmt.Sprintf("v%d", n)
				if l.write(w+n, key, func(ctx context.Context, c *client.Client) error {
					_, err := c.KVPut(ctx, key, []byte(val), client.PutOptions{IdempotencyKey: key})
					return err
				}) {
					l.mu.Lock()
					l.kv[key] = val
					l.mu.Unlock()
				}
			}
		})
	}
	l.wg.Go(func() {
		// Posts are paced below the per-user posting limit (60 per 10 s).
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for n := 0; l.running(); n++ {
			<-tick.C
			text := fmt.Sprintf("m-%d", n)
			if l.write(n, text, func(ctx context.Context, c *client.Client) error {
				_, err := c.Post(client.WithIdempotencyKey(ctx, "post-"+text), l.room, text, client.PostOptions{})
				return err
			}) {
				l.mu.Lock()
				l.posts[text] = true
				l.mu.Unlock()
			}
		}
	})
}

func (l *upgradeLoad) running() bool {
	select {
	case <-l.stop:
		return false
	default:
		return true
	}
}

// write runs op against node first, then the others in turn, until it is
// acknowledged (true), fails with an error that is not retryable, or a
// minute passes (both kept as failures; false).
func (l *upgradeLoad) write(first int, what string, op func(context.Context, *client.Client) error) bool {
	deadline := time.Now().Add(time.Minute)
	var last error
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := op(ctx, l.clients[(first+attempt)%len(l.clients)])
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil {
			return true
		}
		if !timedOut && !client.IsRetryable(err) {
			l.fail(fmt.Sprintf("%s: error that is not retryable: %v", what, err))
			return false
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	l.fail(fmt.Sprintf("%s: not acknowledged within a minute; last error: %v", what, last))
	return false
}

func (l *upgradeLoad) fail(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = append(l.failures, msg)
}

func (l *upgradeLoad) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.kv) + len(l.posts)
}

// ackedAtLeast waits until n more writes were acknowledged than were at the
// call, so each phase of the upgrade sees writes whatever the machine's speed.
func (l *upgradeLoad) ackedAtLeast(t *testing.T, more int, within time.Duration) {
	t.Helper()
	want := l.acked() + more
	deadline := time.Now().Add(within)
	for l.acked() < want {
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes acknowledged after %v, want %d; failures: %q", l.acked(), within, want, l.failures)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A three-node cluster runs the previous release (testdata/upgrade-from);
// under KV and chat write load, each node in turn is stopped with SIGTERM
// and started on the same data directory with the binary of the work tree,
// as docs/UPGRADE.md says, with `parley cluster wait --replicated` between
// nodes. No write fails with an error that is not retryable, every
// acknowledged write is there afterwards on every node (chat posts exactly
// once), the status shows which build each node runs while the cluster is
// mixed and the cluster protocol rises only with the last node (API tokens,
// new at protocol 2, answer a retryable upgrade_in_progress until then), and
// `parley cluster verify` passes at the end.
func TestUpgrade_RollingFromThePreviousReleaseUnderLoad(t *testing.T) {
	oldBin := buildOldParley(t)
	newBin, err := buildParley()
	if err != nil {
		t.Fatal(err)
	}
	procs := startProcs(t, oldBin, 3)
	admin := adminOfProcess(t, procs[0].http)
	token := admin.Token()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.CreateRoom(ctx, client.RoomSpec{Name: "upgrade"}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateQueue(ctx, "upgrade-q"); err != nil {
		t.Fatal(err)
	}
	cli := func(bin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "PARLEY_TOKEN="+token)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("parley %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	cli(newBin, "cluster", "wait", "--replicated", "--server", "http://"+procs[0].http, "--max-wait", "2m")
	if v := cli(newBin, "--version"); !strings.Contains(v, "internal protocol") || !strings.Contains(v, "data format") {
		t.Errorf("parley --version does not name the protocol and data format:\n%s", v)
	}

	load := &upgradeLoad{room: "upgrade", kv: map[string]string{}, posts: map[string]bool{}}
	for _, p := range procs {
		load.clients = append(load.clients, client.New("http://"+p.http, client.WithToken(token)))
	}
	load.start(6)
	t.Cleanup(func() {
		select {
		case <-load.stop:
		default:
			close(load.stop)
		}
		load.wg.Wait()
	})
	load.ackedAtLeast(t, 100, time.Minute)

	for step, i := range []int{2, 1, 0} {
		p, other := procs[i], procs[(i+1)%3]
		p.term(t, time.Minute)
		load.ackedAtLeast(t, 50, time.Minute) // the other two keep a majority
		// The same flags, --join and --join-token included (ignored on a restart).
		p.start(t, newBin)
		waitReady(t, load.clients[i], time.Minute, p.log)
		cli(newBin, "cluster", "wait", "--replicated", "--server", "http://"+other.http, "--max-wait", "3m")
		load.ackedAtLeast(t, 50, time.Minute)

		// The status says which nodes run which build while the cluster is
		// mixed: the previous release gossips none.
		// The cluster's protocol stays the old release's until the last
		// node runs the new one (gossip may take a moment to tell).
		wantProtocol := 1
		if step == 2 {
			wantProtocol = compat.Protocol
		}
		var st *client.ClusterStatus
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			st, err = load.clients[i].Cluster(context.Background())
			if err == nil && st.Protocol == wantProtocol || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if st.Protocol != wantProtocol {
			t.Errorf("after upgrading %d node(s): cluster protocol %d, want %d", step+1, st.Protocol, wantProtocol)
		}
		// A feature with new replicated commands (API tokens, protocol 2)
		// waits for the whole cluster: retryable until then, then works.
		_, terr := load.clients[i].CreateAPIToken(context.Background(), fmt.Sprintf("bot%d", step), []string{"read"}, time.Hour)
		switch {
		case step < 2 && (terr == nil || !client.IsRetryable(terr) || !strings.Contains(terr.Error(), "upgrade_in_progress")):
			t.Errorf("after upgrading %d node(s): creating an API token: %v, want a retryable upgrade_in_progress", step+1, terr)
		case step == 2 && terr != nil:
			t.Errorf("after the upgrade: creating an API token: %v", terr)
		}
		// So do room settings (and roles, invitations, moderation).
		topic := fmt.Sprintf("after step %d", step)
		_, rerr := load.clients[i].UpdateRoomSettings(context.Background(), "upgrade", client.RoomSettings{Topic: &topic})
		switch {
		case step < 2 && (rerr == nil || !client.IsRetryable(rerr) || !strings.Contains(rerr.Error(), "upgrade_in_progress")):
			t.Errorf("after upgrading %d node(s): room settings: %v, want a retryable upgrade_in_progress", step+1, rerr)
		case step == 2 && rerr != nil:
			t.Errorf("after the upgrade: room settings: %v", rerr)
		case step == 2:
			for j, c := range load.clients {
				if r, err := c.GetRoom(context.Background(), "upgrade"); err != nil || r.Topic != topic {
					t.Errorf("n%d: room after the upgrade = %+v, %v", j+1, r, err)
				}
			}
		}
		// So does acknowledging on receive; a separate ack works throughout.
		checkAckOnReceive(t, load.clients[i], step)
		for _, n := range st.Nodes {
			upgraded := n.ID == "n3" || n.ID == "n2" && step >= 1 || n.ID == "n1" && step >= 2
			if upgraded != (n.Build != "") {
				t.Errorf("after upgrading %d node(s): node %s reports build %q", step+1, n.ID, n.Build)
			}
		}
	}
	close(load.stop)
	load.wg.Wait()
	if len(load.failures) > 0 {
		t.Fatalf("%d writes failed during the upgrade, first: %s", len(load.failures), load.failures[0])
	}

	status := cli(newBin, "cluster", "status", "--server", "http://"+procs[1].http)
	t.Logf("after the upgrade:\n%s", status)
	if !strings.Contains(status, "BUILD") {
		t.Errorf("cluster status shows no BUILD column:\n%s", status)
	}
	t.Log(cli(newBin, "cluster", "verify", "--server", "http://"+procs[2].http))

	t.Logf("%d KV writes and %d posts acknowledged during the upgrade", len(load.kv), len(load.posts))
	for i, c := range load.clients {
		for key, val := range load.kv {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			got, _, err := c.KVGet(ctx, key, client.GetOptions{})
			cancel()
			if err != nil || string(got) != val {
				t.Fatalf("n%d: %s = %q (%v), acknowledged %q", i+1, key, got, err, val)
			}
		}
	}
	seen := map[string]int{}
	var after uint64
	for {
		page, err := admin.History(context.Background(), "upgrade", client.HistoryOptions{After: after, HasAfter: true, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, ev := range page {
			if ev.Kind == "message" {
				seen[ev.Text]++
			}
			after = ev.Seq
		}
	}
	for text := range load.posts {
		if seen[text] != 1 {
			t.Errorf("post %q acknowledged, in the history %d times", text, seen[text])
		}
	}
}

// checkAckOnReceive takes a message of the queue upgrade-q under a lease
// through c (an upgraded node) after upgrading step+1 nodes, and
// acknowledges it with the next receive: refused as upgrade_in_progress,
// retryable, and nothing acknowledged, until the whole cluster runs the new
// build (step 2); then it works.
func checkAckOnReceive(t *testing.T, c *client.Client, step int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Send(ctx, "upgrade-q", fmt.Sprintf("step %d", step), client.SendOptions{}); err != nil {
		t.Errorf("after upgrading %d node(s): send: %v", step+1, err)
		return
	}
	m, found, err := c.Receive(ctx, "upgrade-q", client.ReceiveOptions{AckTimeout: time.Minute})
	if err != nil || !found {
		t.Errorf("after upgrading %d node(s): receive = %v, %v", step+1, found, err)
		return
	}
	_, _, err = c.Receive(ctx, "upgrade-q", client.ReceiveOptions{Ack: []string{m.Receipt}})
	switch {
	case step < 2 && (err == nil || !client.IsRetryable(err) || !strings.Contains(err.Error(), "upgrade_in_progress")):
		t.Errorf("after upgrading %d node(s): receive with ack: %v, want a retryable upgrade_in_progress", step+1, err)
	case step < 2:
		if err := c.Ack(ctx, "upgrade-q", m.Receipt); err != nil {
			t.Errorf("after upgrading %d node(s): ack after the refused receive: %v", step+1, err)
		}
	case err != nil:
		t.Errorf("after the upgrade: receive with ack: %v", err)
	default:
		if err := c.Ack(ctx, "upgrade-q", m.Receipt); err == nil || !strings.Contains(err.Error(), "conflict") {
			t.Errorf("after the upgrade: the receive did not acknowledge: ack again = %v, want 409", err)
		}
	}
}

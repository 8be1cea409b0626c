package faults_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// `parley serve --join` without a token, or with a wrong or revoked one,
// is refused and never listed by GET /api/v1/cluster; with the token from
// the first node's data directory, or one made by `parley cluster token
// create`, it joins.
func TestProcess_JoinNeedsTheClusterToken(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test")
	}
	bin, err := buildParley()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first := serveArgs(t, dir, "n1")
	logf, err := os.Create(filepath.Join(dir, "n1.log"))
	if err != nil {
		t.Fatal(err)
	}
	p1 := &proc{args: first, http: first[6], log: logf}
	p1.start(t, bin)
	t.Cleanup(p1.kill9)
	waitReady(t, client.New("http://"+p1.http), 20*time.Second)
	token := readJoinToken(t, filepath.Join(dir, "n1"))
	poll.Until(t, 10*time.Second, "the first node prints its join token", func() error {
		if out, _ := os.ReadFile(logf.Name()); !strings.Contains(string(out), "--join-token "+token) {
			return fmt.Errorf("not in its output:\n%s", out)
		}
		return nil
	})
	if fi, err := os.Stat(filepath.Join(dir, "n1", "join-token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("join-token file: %v, mode %v", err, fi.Mode())
	}
	admin := adminOfProcess(t, p1.http)
	joinAddr := first[8]

	wrong := token[:len(token)-4] + "0000"
	if strings.HasSuffix(token, "0000") {
		wrong = token[:len(token)-4] + "1111"
	}
	for name, extra := range map[string][]string{
		"no token":    nil,
		"wrong token": {"--join-token", wrong},
		"bad token":   {"--join-token", "not-a-token"},
	} {
		args := append(serveArgs(t, dir, "n2"), append(extra, "--join", joinAddr)...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		hung := ctx.Err() != nil
		cancel()
		if err == nil || hung {
			t.Fatalf("%s: the node started (or hung): %v\n%s", name, err, out)
		}
		if !strings.Contains(string(out), "join") || strings.Contains(string(out), wrong[len(wrong)-32:]) {
			t.Errorf("%s: the refusal does not say why, or repeats the secret:\n%s", name, out)
		}
		_ = os.RemoveAll(filepath.Join(dir, "n2"))
		assertNodeNotListed(t, admin, "n2")
	}

	// A token made by an admin works until revoked.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	made, err := admin.CreateJoinToken(ctx, "for n3", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.RevokeJoinToken(ctx, made.ID); err != nil {
		t.Fatal(err)
	}
	args := append(serveArgs(t, dir, "n3"), "--join-token", made.Token, "--join", joinAddr)
	if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err == nil || !strings.Contains(string(out), "join token refused") {
		t.Fatalf("a revoked token joined: %v\n%s", err, out)
	}
	_ = os.RemoveAll(filepath.Join(dir, "n3"))
	assertNodeNotListed(t, admin, "n3")

	// The first node's token joins.
	args = append(serveArgs(t, dir, "n2"), "--join-token", token, "--join", joinAddr)
	logf2, _ := os.Create(filepath.Join(dir, "n2.log"))
	p2 := &proc{args: args, http: args[6], log: logf2}
	p2.start(t, bin)
	t.Cleanup(p2.kill9)
	waitReady(t, client.New("http://"+p2.http), 30*time.Second)
	st, err := admin.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(st) == "" || !strings.Contains(fmt.Sprintf("%+v", st.Nodes), "n2") {
		t.Fatalf("n2 is not listed after joining: %+v", st.Nodes)
	}
}

// serveArgs returns `parley serve` arguments for node id in dir: args[6] is
// the HTTP address and args[8] the cluster address.
func serveArgs(t *testing.T, dir, id string) []string {
	return []string{"serve", "--id", id, "--data-dir", filepath.Join(dir, id),
		"--http", testcluster.FreeAddr(t), "--cluster", clusterPort(t), "--partitions", "4", "--tick", "20ms"}
}

// adminOfProcess registers the first user (the admin) through addr and returns
// a client signed in as it.
func adminOfProcess(t *testing.T, addr string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client.New("http://" + addr)
	if _, err := c.Register(ctx, "admin", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	s, err := c.Login(ctx, "admin", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	return client.New("http://"+addr, client.WithToken(s.Token))
}

// assertNodeNotListed fails when GET /api/v1/cluster lists node id.
func assertNodeNotListed(t *testing.T, c *client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.ID == id {
			t.Fatalf("GET /api/v1/cluster lists %s: %+v", id, n)
		}
	}
}

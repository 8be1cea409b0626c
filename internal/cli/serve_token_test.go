package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/poll"
)

// TestServe_InitialNodeJoinTokenFile runs two nodes with the same flags but
// their ids, as a StatefulSet does: --initial-node names the creator, the
// other joins through a host name (localhost) and takes its token from
// --join-token-file, waiting for it since it starts first.
func TestServe_InitialNodeJoinTokenFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two nodes")
	}
	base := freeBasePort(t, 4) // each node: cluster port, gossip port
	tokenFile := filepath.Join(t.TempDir(), "join-token")
	node := func(id string, port int) []string {
		return []string{"serve", "--id", id, "--data-dir", t.TempDir(), "--http", "127.0.0.1:0",
			"--cluster", "127.0.0.1:" + strconv.Itoa(port), "--partitions", "2", "--tick", "10ms", "--log-level", "info",
			"--initial-node", "a", "--join", "localhost:" + strconv.Itoa(base), "--join-token-file", tokenFile}
	}
	bOut, bErr, stopB := background(t, node("b", base+2)...)
	waitFor(t, bErr, bOut, regexp.MustCompile(`waiting for the join token file`), 30*time.Second)

	aOut, aErr, stopA := background(t, node("a", base)...)
	m := waitFor(t, aOut, aErr, servingRE, 30*time.Second)
	printed := waitFor(t, aOut, aErr, regexp.MustCompile(`created a new cluster; other nodes join it with:\n.* --join-token (\S+)`), 30*time.Second)[1]
	b, err := os.ReadFile(tokenFile)
	if err != nil || strings.TrimSpace(string(b)) != printed {
		t.Errorf("token file %q (%v) is not the token printed, %s", b, err, printed)
	}
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, %v; want mode 0600", fi, err)
	}
	waitFor(t, bOut, bErr, servingRE, 60*time.Second)

	url := m[1]
	tok := "--token=" + signUp(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	poll.Until(t, 30*time.Second, "both nodes in the cluster", func() bool {
		out := run(ctx, nil, "", "cluster", "status", "--server", url, tok).stdout
		return strings.Contains(out, "2 nodes")
	})
	if code := stopB(); code != 0 {
		t.Errorf("b exit %d", code)
	}
	if code := stopA(); code != 0 {
		t.Errorf("a exit %d", code)
	}
}

func TestServe_JoinTokenFlagsExclusive(t *testing.T) {
	r := run(context.Background(), nil, "", "serve", "--join", "x:1", "--join-token", "t", "--join-token-file", "f")
	if r.code != 2 || !strings.Contains(r.stderr, "--join-token and --join-token-file: give one") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(context.Background(), nil, "", "serve", "--id", "b", "--initial-node", "a")
	if r.code != 2 || !strings.Contains(r.stderr, `node "b" does not create the cluster, so it needs --join`) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// The initial node never reads the token file, since it creates the cluster
// on an empty directory; with --rebuild-quarantined it joins when it
// rebuilds, so it reads a token the file holds (without waiting for one).
func TestServe_RebuildingInitialNodeReadsTheTokenFile(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "join-token")
	if err := os.WriteFile(tokenFile, []byte("PRLY1.pin.id.secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "QUARANTINED"), []byte("corrupt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, rebuild := range []bool{false, true} {
		o := ServeOptions{JoinTokenFile: tokenFile}
		cfg := config.Default()
		cfg.ID, cfg.InitialNode, cfg.Join, cfg.DataDir, cfg.RebuildQuarantined = "a", "a", []string{"b:7071"}, dir, rebuild
		if err := o.readJoinTokenFile(context.Background(), &cfg, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{false: "", true: "PRLY1.pin.id.secret"}[rebuild]; cfg.JoinToken != want {
			t.Errorf("--rebuild-quarantined=%v: join token %q, want %q", rebuild, cfg.JoinToken, want)
		}
	}
}

// The initial node with --rebuild-quarantined (the StatefulSet sets it for
// every pod) creates the cluster on an empty directory: it must not wait
// for a token file that only its own cluster can fill.
func TestServe_RebuildingInitialNodeDoesNotWaitOnAnEmptyDir(t *testing.T) {
	o := ServeOptions{JoinTokenFile: filepath.Join(t.TempDir(), "join-token")}
	cfg := config.Default()
	cfg.ID, cfg.InitialNode, cfg.Join, cfg.DataDir, cfg.RebuildQuarantined = "a", "a", []string{"b:7071"}, t.TempDir(), true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := o.readJoinTokenFile(ctx, &cfg, slog.New(slog.DiscardHandler)); err != nil || cfg.JoinToken != "" {
		t.Fatalf("initial node on an empty dir: %v, token %q; want no wait and no token", err, cfg.JoinToken)
	}
}

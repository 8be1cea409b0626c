package cli

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/hangserver"
)

// TestClient_CommandsGoOnWhenTheirServerIsDown: a one-shot command whose
// --server cannot be reached is sent to the next server of a
// comma-separated --server, or to the other nodes of the stored login, at
// once, and does what it was asked once.
func TestClient_CommandsGoOnWhenTheirServerIsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	env := map[string]string{"PARLEY_CONFIG_DIR": dir}
	mustRunEnv(t, ctx, env, "alice-password\n", "user", "register", "alice", "--password-stdin", "--server", url)

	if got := mustRunEnv(t, ctx, env, "", "kv", "put", "k", "one", "--server", dead+","+url, "--timeout", "5s"); got != "1\n" {
		t.Fatalf("kv put with --server %s,%s printed %q, want version 1", dead, url, got)
	}

	// A node that accepts connections and never answers (stopped, wedged):
	// the write and the read leave it for the next server well within
	// --timeout, and the write applies once.
	hung, _ := hangserver.Start(t)
	if got := mustRunEnv(t, ctx, env, "", "kv", "put", "k", "hung", "--server", hung+","+url, "--timeout", "20s"); got != "2\n" {
		t.Fatalf("kv put with --server %s,%s (the first hangs) printed %q, want version 2", hung, url, got)
	}
	if got := mustRunEnv(t, ctx, env, "", "kv", "get", "k", "--server", hung+","+url, "--timeout", "20s"); got != "hung" {
		t.Fatalf("kv get with a hung first server printed %q, want hung", got)
	}
	// A shorter --dial-timeout leaves the hung server sooner: within a
	// --timeout shorter than the default's two waits (3 s + 3 s).
	if got := mustRunEnv(t, ctx, env, "", "kv", "get", "k", "--server", hung+","+url, "--timeout", "4s", "--dial-timeout", "300ms"); got != "hung" {
		t.Fatalf("kv get with --dial-timeout 300ms and a hung first server printed %q, want hung", got)
	}
	if r := run(ctx, env, "", "kv", "get", "k", "--server", url, "--dial-timeout", "0s"); r.code != 2 || !strings.Contains(r.stderr, "--dial-timeout 0s: must be positive") {
		t.Fatalf("--dial-timeout 0s: exit %d, stderr %q; want a usage error naming the flag", r.code, r.stderr)
	}

	// The login is kept for the cluster's nodes: make the dead address one
	// of them, as a node that has since gone down.
	path := filepath.Join(dir, "logins.json")
	logins, err := readLogins(path)
	if err != nil {
		t.Fatal(err)
	}
	for k, l := range logins {
		l.Servers = append([]string{loginKey(dead)}, l.Servers...)
		logins[k] = l
	}
	if err := writeLogins(path, logins); err != nil {
		t.Fatal(err)
	}
	if got := mustRunEnv(t, ctx, env, "", "kv", "put", "k", "two", "--server", dead, "--timeout", "5s"); got != "3\n" {
		t.Fatalf("kv put on a dead node of the login printed %q, want version 3", got)
	}
	if got := mustRunEnv(t, ctx, env, "", "kv", "get", "k", "--server", dead, "--timeout", "5s"); got != "two" {
		t.Fatalf("kv get on a dead node of the login printed %q, want two", got)
	}

	// A session refused by the node that answered: the advice names that
	// node, not the dead one the command was first sent to.
	r := run(ctx, env, "", "kv", "get", "k", "--server", dead+","+url, "--token", "not-a-session", "--timeout", "5s")
	if r.code == 0 || !strings.Contains(r.stderr, "--server "+url) || strings.Contains(r.stderr, "--server "+dead) {
		t.Fatalf("kv get with a refused token via a fallback = %+v, want login advice naming %s", r, url)
	}

	// Without a login that names other nodes there is nowhere to go: the
	// error names the server.
	b, _ := json.Marshal(map[string]any{})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(ctx, env, "", "kv", "get", "k", "--server", dead, "--token", "x", "--timeout", "2s")
	if r.code == 0 || !strings.Contains(r.stderr, strings.TrimPrefix(dead, "http://")) {
		t.Fatalf("kv get on a dead server alone = %+v, want an error naming it", r)
	}
}

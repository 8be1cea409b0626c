package cli

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

// mustRunEnv runs args with env and stdin and fails the test unless it
// exits 0.
func mustRunEnv(t *testing.T, ctx context.Context, env map[string]string, stdin string, args ...string) string {
	t.Helper()
	r := run(ctx, env, stdin, args...)
	if r.code != 0 {
		t.Fatalf("parley %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

func TestUser_EndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t, "--registration", "closed")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := filepath.Join(t.TempDir(), "config") // created by the first login
	env := map[string]string{"PARLEY_CONFIG_DIR": cfg}
	srv := "--server=" + url
	const alicePW, bobPW = "alice-password\n", "bob-password\r\n"
	hint := "; run: parley user login "

	t.Run("register", func(t *testing.T) {
		if got := mustRunEnv(t, ctx, env, alicePW, "user", "register", "alice", "--password-stdin", "--no-login", srv); got != "registered alice (admin)\n" {
			t.Errorf("first register printed %q", got)
		}
		if _, err := os.Stat(cfg); !os.IsNotExist(err) {
			t.Errorf("register --no-login created %s (%v)", cfg, err)
		}
		r := run(ctx, env, bobPW, "user", "register", "bob", "--password-stdin", srv)
		if r.code != 1 || !strings.Contains(r.stderr, "(forbidden)") {
			t.Errorf("register with registration closed and no login = %+v, want forbidden", r)
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		r := run(ctx, env, "not-the-password\n", "user", "login", "alice", "--password-stdin", srv)
		if r.code != 1 || r.stderr != "error: invalid username or password (unauthorized)\n" {
			t.Errorf("wrong password = %+v, want exit 1 and one clear line", r)
		}
		if _, err := os.Stat(cfg); !os.IsNotExist(err) {
			t.Errorf("a failed login created %s (%v)", cfg, err)
		}
	})

	t.Run("no terminal and no --password-stdin", func(t *testing.T) {
		r := run(ctx, env, alicePW, "user", "login", "alice", srv)
		if r.code != 2 || !strings.Contains(r.stderr, "--password-stdin") {
			t.Errorf("login without a terminal = %+v, want usage error naming --password-stdin", r)
		}
	})

	t.Run("login stores the session", func(t *testing.T) {
		out := mustRunEnv(t, ctx, env, alicePW, "user", "login", "alice", "--password-stdin", srv)
		if !regexp.MustCompile(`^logged in as alice on ` + regexp.QuoteMeta(url) + ` \(expires \d{4}-\d\d-\d\dT.+\)\n$`).MatchString(out) {
			t.Errorf("login printed %q", out)
		}
		assertMode(t, cfg, 0o700)
		assertMode(t, filepath.Join(cfg, "logins.json"), 0o600)
		logins := mustReadLogins(t, cfg)
		key, l, ok := findLogin(logins, url, resolveHost)
		if len(logins) != 1 || !ok || !strings.HasPrefix(key, "cluster:") || l.Username != "alice" || l.Token == "" ||
			l.ExpiresAt <= time.Now().UnixMilli() || !slices.Contains(l.Servers, url) {
			t.Errorf("login file = %+v, want alice's session for the cluster, serving %s", logins, url)
		}
		entries, _ := os.ReadDir(cfg)
		if len(entries) != 1 {
			t.Errorf("config dir holds %d files, want only logins.json (no temporary files)", len(entries))
		}
		if got := mustRunEnv(t, ctx, env, "", "user", "whoami", srv); got != "alice\n" {
			t.Errorf("whoami = %q", got)
		}
		if got := mustRunEnv(t, ctx, env, "", "user", "whoami", "--server", url+"/"); got != "alice\n" {
			t.Errorf("whoami with a trailing slash = %q", got)
		}
	})

	t.Run("admin's stored login registers under closed registration, and stays", func(t *testing.T) {
		r := run(ctx, env, bobPW, "user", "register", "bob", "--password-stdin", srv)
		if r.code != 0 || r.stdout != "registered bob\n" || !strings.Contains(r.stderr, "note: still logged in as alice; run: parley user login bob") {
			t.Errorf("register bob = %+v, want registered with a note that alice's login stays", r)
		}
		if got := mustRunEnv(t, ctx, env, "", "user", "whoami", srv); got != "alice\n" {
			t.Errorf("whoami after registering bob = %q, want alice", got)
		}
	})

	t.Run("client commands use the stored login", func(t *testing.T) {
		if v := mustRunEnv(t, ctx, env, "", "kv", "put", "k", "stored", srv); v != "1\n" {
			t.Errorf("put printed %q, want version 1", v)
		}
		if got := mustRunEnv(t, ctx, env, "", "kv", "get", "k", srv); got != "stored" {
			t.Errorf("get = %q", got)
		}
		withServerEnv := map[string]string{"PARLEY_CONFIG_DIR": cfg, "PARLEY_SERVER": url}
		if !strings.Contains(mustRunEnv(t, ctx, withServerEnv, "", "cluster", "status"), "PARTITION") {
			t.Error("cluster status with $PARLEY_SERVER and the stored login failed")
		}
	})

	t.Run("precedence: --token, then $PARLEY_TOKEN, then the stored login", func(t *testing.T) {
		bob := client.New(url)
		if _, err := bob.Login(ctx, "bob", "bob-password"); err != nil {
			t.Fatal(err)
		}
		badEnv := map[string]string{"PARLEY_CONFIG_DIR": cfg, "PARLEY_TOKEN": "bogus"}
		r := run(ctx, badEnv, "", "kv", "get", "k", srv)
		want := "(unauthorized)" + hint + "USERNAME --server " + url + "\n"
		if r.code != 1 || !strings.HasPrefix(r.stderr, "error: ") || !strings.HasSuffix(r.stderr, want) {
			t.Errorf("$PARLEY_TOKEN=bogus over a good stored login = %+v, want exit 1 ending %q", r, want)
		}
		if got := mustRunEnv(t, ctx, badEnv, "", "kv", "get", "k", srv, "--token", bob.Token()); got != "stored" {
			t.Errorf("--token over a bad $PARLEY_TOKEN: get = %q", got)
		}
		goodEnv := map[string]string{"PARLEY_CONFIG_DIR": cfg, "PARLEY_TOKEN": bob.Token()}
		if r := run(ctx, goodEnv, "", "kv", "get", "k", srv, "--token", "bogus"); r.code != 1 || !strings.Contains(r.stderr, "(unauthorized)") {
			t.Errorf("bad --token over a good $PARLEY_TOKEN = %+v, want unauthorized", r)
		}
	})

	t.Run("a revoked stored session names its user", func(t *testing.T) {
		stale := mustFindLogin(t, cfg, url).Token
		if err := client.New(url, client.WithToken(stale)).Logout(ctx); err != nil {
			t.Fatal(err)
		}
		r := run(ctx, env, "", "kv", "get", "k", srv)
		want := "(unauthorized)" + hint + "alice --server " + url + "\n"
		if r.code != 1 || !strings.HasSuffix(r.stderr, want) {
			t.Errorf("get with a revoked stored session = %+v, want the hint %q", r, want)
		}
		mustRunEnv(t, ctx, env, alicePW, "user", "login", "alice", "--password-stdin", srv)
	})

	t.Run("logout ends the session and forgets it", func(t *testing.T) {
		tok := mustFindLogin(t, cfg, url).Token
		if got := mustRunEnv(t, ctx, env, "", "user", "logout", srv); got != "logged out of "+url+"\n" {
			t.Errorf("logout printed %q", got)
		}
		if logins := mustReadLogins(t, cfg); len(logins) != 0 {
			t.Errorf("login file after logout = %+v, want empty", logins)
		}
		assertMode(t, filepath.Join(cfg, "logins.json"), 0o600)
		r := run(ctx, env, "", "user", "whoami", srv)
		if r.code != 1 || !strings.Contains(r.stderr, "not logged in on "+url) {
			t.Errorf("whoami after logout = %+v", r)
		}
		if r := run(ctx, env, "", "user", "logout", srv); r.code != 1 || !strings.Contains(r.stderr, "not logged in") {
			t.Errorf("second logout = %+v, want not logged in", r)
		}
		r = run(ctx, env, "", "kv", "get", "k", srv)
		if r.code != 1 || !strings.HasSuffix(r.stderr, "(unauthorized)"+hint+"USERNAME --server "+url+"\n") {
			t.Errorf("get after logout = %+v, want unauthorized with the hint", r)
		}
		// The token stops working on every node within a second.
		deadline := time.Now().Add(5 * time.Second)
		for {
			r := run(ctx, nil, "", "kv", "get", "k", srv, "--token", tok)
			if r.code == 1 && strings.Contains(r.stderr, "(unauthorized)") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the logged-out token still works: %+v", r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("logout of an unreachable server still forgets the login", func(t *testing.T) {
		gone := "http://127.0.0.1:1"
		if _, err := updateLogin(&Env{Getenv: envMap(env)}, gone, &storedLogin{Username: "alice", Token: "t", ExpiresAt: 1}); err != nil {
			t.Fatal(err)
		}
		r := run(ctx, env, "", "user", "logout", "--server", gone, "--timeout", "5s")
		if r.code != 0 || r.stdout != "logged out of "+gone+"\n" || !strings.Contains(r.stderr, "warning: ") {
			t.Errorf("logout of an unreachable server = %+v, want exit 0 with a warning", r)
		}
		if logins := mustReadLogins(t, cfg); len(logins) != 0 {
			t.Errorf("login file = %+v, want empty", logins)
		}
	})
}

func TestPromptPassword(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		confirm     bool
		want        string
		wantErr     string
	}{
		{"one line", "s3cret pass\n", false, "s3cret pass", ""},
		{"confirmed", "s3cret\ns3cret\n", true, "s3cret", ""},
		{"confirmation differs", "s3cret\nsecret\n", true, "", "differ"},
		{"empty", "\n", false, "", "no password"},
		{"no input", "", false, "", "no password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var prompt strings.Builder
			got, err := promptPassword(plainInput{bufio.NewReader(strings.NewReader(tc.input))}, &prompt, "alice", tc.confirm)
			if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %q, %v; want %q, error containing %q", got, err, tc.want, tc.wantErr)
			}
			if !strings.HasPrefix(prompt.String(), "Password for alice") {
				t.Errorf("prompt %q", prompt.String())
			}
		})
	}
}

func TestReadPasswordLine(t *testing.T) {
	for _, tc := range []struct{ name, input, want, wantErr string }{
		{"newline", "pw\nrest", "pw", ""},
		{"CRLF", "pw\r\n", "pw", ""},
		{"no newline", "pw", "pw", ""},
		{"spaces kept", "  pw  \n", "  pw  ", ""},
		{"too long", strings.Repeat("x", maxPasswordLine+1), "", "longer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readPasswordLine(bufio.NewReader(strings.NewReader(tc.input)))
			if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %q, %v; want %q, error containing %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestUser_LoginPerCluster checks that register logs in, and that the
// login serves the cluster under another spelling of the node's address:
// issue 8 had localhost:7070 and 127.0.0.1:7070 each needing a login.
func TestUser_LoginPerCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	if !strings.Contains(url, "127.0.0.1") {
		t.Fatalf("node serves %s, want a 127.0.0.1 address", url)
	}
	alias := strings.Replace(url, "127.0.0.1", "localhost", 1)
	if len(resolveHost("localhost")) == 0 {
		t.Skip("localhost does not resolve here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env := map[string]string{"PARLEY_CONFIG_DIR": t.TempDir()}

	out := mustRunEnv(t, ctx, env, "alice-password\n", "user", "register", "alice", "--password-stdin", "--server", alias)
	if !regexp.MustCompile(`^registered alice \(admin\)\nlogged in as alice on ` + regexp.QuoteMeta(alias) + ` \(expires .+\)\n$`).MatchString(out) {
		t.Errorf("register printed %q, want registered and logged in", out)
	}
	for _, server := range []string{alias, url} {
		if got := mustRunEnv(t, ctx, env, "", "user", "whoami", "--server", server); got != "alice\n" {
			t.Errorf("whoami on %s = %q, want alice", server, got)
		}
	}
	if got := mustRunEnv(t, ctx, env, "", "kv", "put", "k", "v", "--server", url); got != "1\n" {
		t.Errorf("kv put on %s with the login made on %s printed %q", url, alias, got)
	}
	if got := mustRunEnv(t, ctx, env, "", "user", "logout", "--server", url); got != "logged out of "+url+"\n" {
		t.Errorf("logout printed %q", got)
	}
	if r := run(ctx, env, "", "user", "whoami", "--server", alias); r.code != 1 || !strings.Contains(r.stderr, "not logged in") {
		t.Errorf("whoami on %s after logging out on %s = %+v", alias, url, r)
	}
}

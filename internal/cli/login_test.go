package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/client"
)

// mustReadLogins reads the login file in dir.
func mustReadLogins(t *testing.T, dir string) map[string]storedLogin {
	t.Helper()
	logins, err := readLogins(filepath.Join(dir, "logins.json"))
	if err != nil {
		t.Fatal(err)
	}
	return logins
}

// mustFindLogin returns the login the server at url uses from the login
// file in dir.
func mustFindLogin(t *testing.T, dir, url string) storedLogin {
	t.Helper()
	_, l, ok := findLogin(mustReadLogins(t, dir), url, resolveHost)
	if !ok {
		t.Fatalf("no login for %s in %v", url, mustReadLogins(t, dir))
	}
	return l
}

// assertMode fails the test unless path has exactly the permission bits
// mode.
func assertMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != mode {
		t.Errorf("%s has mode %o, want %o", path, got, mode)
	}
}

func TestClientOptions_SignIn(t *testing.T) {
	const server = "http://node.example:7070"
	cfg := t.TempDir()
	if _, err := updateLogin(&Env{Getenv: envMap(map[string]string{"PARLEY_CONFIG_DIR": cfg})}, server, &storedLogin{Username: "alice", Token: "stored"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		args      []string
		env       map[string]string
		wantToken string
		wantUser  string // in the 401 hint
	}{
		{"stored login", nil, nil, "stored", "alice"},
		{"environment over stored", nil, map[string]string{"PARLEY_TOKEN": "env"}, "env", ""},
		{"flag over environment", []string{"--token", "flag"}, map[string]string{"PARLEY_TOKEN": "env"}, "flag", ""},
		{"flag equal to the stored token", []string{"--token", "stored"}, nil, "stored", "alice"},
		{"another server has no login", []string{"--server", "http://other:7070"}, nil, "", ""},
		{"server spelled differently", []string{"--server", "HTTP://Node.Example:7070/"}, nil, "stored", "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"PARLEY_CONFIG_DIR": cfg, "PARLEY_SERVER": server}
			for k, v := range tc.env {
				env[k] = v
			}
			e := &Env{Getenv: envMap(env)}
			var co clientOptions
			fs := newFlagSet("parley test", "[flags]", "")
			addClientFlags(fs, &co)
			if _, err := parseClient(fs, &co, e, tc.args, 0, 0); err != nil {
				t.Fatal(err)
			}
			if co.Token != tc.wantToken || e.login == nil || e.login.username != tc.wantUser {
				t.Errorf("token %q, hint %+v; want token %q, user %q", co.Token, e.login, tc.wantToken, tc.wantUser)
			}
		})
	}
	t.Run("a damaged login file", func(t *testing.T) {
		bad := t.TempDir()
		if err := os.WriteFile(filepath.Join(bad, "logins.json"), []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
		parse := func(args ...string) error {
			var co clientOptions
			fs := newFlagSet("parley test", "[flags]", "")
			addClientFlags(fs, &co)
			_, err := parseClient(fs, &co, &Env{Getenv: envMap(map[string]string{"PARLEY_CONFIG_DIR": bad})}, args, 0, 0)
			return err
		}
		if err := parse(); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("without a token: %v, want the login file called damaged", err)
		}
		if err := parse("--token", "t"); err != nil {
			t.Errorf("with --token: %v, want the file ignored", err)
		}
	})
}

func TestBenchOptions_SignIn(t *testing.T) {
	cfg := t.TempDir()
	e := &Env{Getenv: envMap(map[string]string{"PARLEY_CONFIG_DIR": cfg})}
	if _, err := updateLogin(e, "http://b:7070", &storedLogin{Username: "bob", Token: "b-token"}); err != nil {
		t.Fatal(err)
	}
	o := BenchOptions{Servers: []string{"http://a:7070", "http://b:7070"}}
	if err := o.signIn(e); err != nil || o.Token != "b-token" || e.login.server != "http://b:7070" {
		t.Errorf("signIn: %v, token %q, hint %+v; want b's stored login", err, o.Token, e.login)
	}
	o = BenchOptions{Servers: []string{"http://a:7070"}, Token: "given"}
	if err := o.signIn(e); err != nil || o.Token != "given" {
		t.Errorf("signIn with a token: %v, token %q", err, o.Token)
	}
}

func TestLoginKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://localhost:7070", "http://localhost:7070"},
		{"http://localhost:7070/", "http://localhost:7070"},
		{"HTTPS://Parley.Example.COM", "https://parley.example.com"},
		{"https://example.com/parley/", "https://example.com/parley"},
		{"not a url", "not a url"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := loginKey(tc.in); got != tc.want {
				t.Errorf("loginKey(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestWriteLogins(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "logins.json")
	if logins, err := readLogins(path); err != nil || len(logins) != 0 {
		t.Fatalf("missing file: %v, %v; want no logins", logins, err)
	}
	one := map[string]storedLogin{"http://x:1": {Username: "u", Token: "t", ExpiresAt: 42}}
	if err := writeLogins(path, one); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // a file loosened by hand is tightened on rewrite
		t.Fatal(err)
	}
	two := map[string]storedLogin{"http://x:1": {Username: "u", Token: "t2", ExpiresAt: 43}, "http://y:2": {Username: "v", Token: "t3"}}
	if err := writeLogins(path, two); err != nil {
		t.Fatal(err)
	}
	assertMode(t, dir, 0o700)
	assertMode(t, path, 0o600)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if e := raw["http://x:1"]; e["username"] != "u" || e["token"] != "t2" || e["expires_at"] != float64(43) {
		t.Errorf("file = %s", data)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want 1 (temporary files removed)", len(entries))
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if logins, err := readLogins(path); err != nil || len(logins) != 0 {
		t.Errorf("empty file: %v, %v; want no logins", logins, err)
	}
}

func TestFindLogin(t *testing.T) {
	logins := map[string]storedLogin{
		"cluster:c1":              {Username: "alice", Token: "a", Servers: []string{"http://localhost:7070", "http://127.0.0.1:7070", "http://10.0.0.2:7070"}},
		"cluster:c2":              {Username: "bob", Token: "b", Servers: []string{"https://parley.example.com"}},
		"http://old.example:7070": {Username: "carol", Token: "c"}, // written by an older version
	}
	resolve := func(host string) []string {
		return map[string][]string{"node2.lan": {"10.0.0.2"}, "parley.example.com": {"192.0.2.7"}, "alias.example": {"192.0.2.7"}}[host]
	}
	for _, tc := range []struct{ server, wantKey string }{
		{"http://localhost:7070", "cluster:c1"},
		{"http://127.0.0.1:7070/", "cluster:c1"},
		{"http://10.0.0.2:7070", "cluster:c1"},       // another node of the cluster
		{"http://node2.lan:7070", "cluster:c1"},      // its name resolves to a listed node
		{"HTTPS://Parley.Example.COM", "cluster:c2"}, // spelled differently
		{"http://old.example:7070", "http://old.example:7070"},
		{"http://10.0.0.2:7071", ""},        // another port
		{"https://127.0.0.1:7070", ""},      // another scheme: no token over a different channel
		{"http://parley.example.com", ""},   // http where the login is https
		{"https://alias.example", ""},       // a name resolving to an IP address no listed URL spells
		{"http://unknown.example:7070", ""}, // resolves to nothing
		{"http://old.example:7070/sub", ""}, // another path
	} {
		t.Run(tc.server, func(t *testing.T) {
			key, _, ok := findLogin(logins, tc.server, resolve)
			if ok != (tc.wantKey != "") || key != tc.wantKey {
				t.Errorf("findLogin(%s) = %q, %v; want %q", tc.server, key, ok, tc.wantKey)
			}
		})
	}
}

func TestClusterServers(t *testing.T) {
	st := &client.ClusterStatus{ClusterID: "c1", Nodes: []client.NodeStatus{
		{ID: "n1", Addr: "127.0.0.1:7070", State: "alive"},
		{ID: "n2", Addr: "127.0.0.1:7072", State: "alive"},
		{ID: "n3", Addr: "0.0.0.0:7074", State: "alive"},
		{ID: "n4", Addr: "10.6.6.6:7070", State: "dead"},
	}}
	resolve := func(string) []string { return []string{"127.0.0.1", "::1"} }
	got := clusterServers("http://LocalHost:7070/", st, resolve)
	want := []string{"http://localhost:7070", "http://127.0.0.1:7070", "http://[::1]:7070", "http://127.0.0.1:7072", "http://localhost:7074"}
	if !slices.Equal(got, want) {
		t.Errorf("clusterServers = %q, want %q", got, want)
	}
}

func TestStoreLogin(t *testing.T) {
	cfg := t.TempDir()
	e := &Env{Getenv: envMap(map[string]string{"PARLEY_CONFIG_DIR": cfg})}
	// An older version's login for one of the cluster's URLs.
	if _, err := updateLogin(e, "http://127.0.0.1:7070", &storedLogin{Username: "old", Token: "o"}); err != nil {
		t.Fatal(err)
	}
	if _, err := updateLogin(e, "http://elsewhere:7070", &storedLogin{Username: "other", Token: "x"}); err != nil {
		t.Fatal(err)
	}
	servers := []string{"http://localhost:7070", "http://127.0.0.1:7070", "http://127.0.0.1:7072"}
	if err := storeLogin(e, "http://localhost:7070/", "c1", servers, storedLogin{Username: "alice", Token: "a"}); err != nil {
		t.Fatal(err)
	}
	logins := mustReadLogins(t, cfg)
	if len(logins) != 2 || logins["cluster:c1"].Token != "a" || !slices.Equal(logins["cluster:c1"].Servers, servers) || logins["http://elsewhere:7070"].Token != "x" {
		t.Fatalf("login file = %+v, want the cluster's login replacing the older one of its URL", logins)
	}
	for _, s := range servers {
		if l, ok, err := lookupLogin(e, s); err != nil || !ok || l.Username != "alice" {
			t.Errorf("lookupLogin(%s) = %+v, %v, %v; want alice's", s, l, ok, err)
		}
	}
	// A new login to the cluster replaces the old one, whatever URL it was made on.
	if err := storeLogin(e, "http://127.0.0.1:7072", "c1", servers[1:], storedLogin{Username: "bob", Token: "b"}); err != nil {
		t.Fatal(err)
	}
	if logins := mustReadLogins(t, cfg); len(logins) != 2 || logins["cluster:c1"].Username != "bob" {
		t.Fatalf("login file = %+v, want bob's login for the cluster", logins)
	}
	// Logging out through any of its URLs forgets it for all.
	if had, err := updateLogin(e, "http://127.0.0.1:7070", nil); err != nil || !had {
		t.Fatalf("updateLogin(nil) = %v, %v", had, err)
	}
	if logins := mustReadLogins(t, cfg); len(logins) != 1 {
		t.Errorf("login file after logout = %+v, want only the unrelated login", logins)
	}
	// Without a cluster id, the login is kept for the URL, as before.
	if err := storeLogin(e, "http://Old-Server:7070/", "", nil, storedLogin{Username: "carol", Token: "c"}); err != nil {
		t.Fatal(err)
	}
	if l := mustReadLogins(t, cfg)["http://old-server:7070"]; l.Token != "c" || l.Servers != nil {
		t.Errorf("login without a cluster = %+v", l)
	}
}

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

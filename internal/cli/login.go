package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/client"
)

// The login file keeps one session per cluster, so client commands need
// neither --token nor $PARLEY_TOKEN after `parley user login`, on any node
// of the cluster under any spelling of its address. It lives at
// $PARLEY_CONFIG_DIR/logins.json, or else <user config dir>/parley/logins.json
// (os.UserConfigDir: $XDG_CONFIG_HOME or ~/.config on Linux), and holds a
// JSON object from "cluster:" and the cluster id (GET /api/v1/cluster) to
// the login and the base URLs it serves:
//
//	{
//	  "cluster:3f9c2a…": {
//	    "username": "alice",
//	    "token": "…",
//	    "expires_at": 1767225600000,
//	    "servers": ["http://localhost:7070", "http://127.0.0.1:7070", "http://127.0.0.1:7072"]
//	  }
//	}
//
// The servers are the URL logged in on, its host's IP addresses, and the
// addresses the cluster's alive nodes advertise, all in the scheme logged
// in with. A command finds its login by --server: listed in servers, or
// resolving to an IP address of a listed server with the same scheme and
// port (so http://localhost:7070 finds a login made on http://127.0.0.1:7070).
// A token is never sent to a server outside its cluster's list, nor over
// http when it was issued over https.
//
// Older versions keyed logins by server URL ("http://localhost:7070": {…});
// such entries are still read, for their URL only, and a new login on that
// server replaces them. A login whose cluster cannot be asked (an old
// server) is stored that way too.
//
// The file is written with mode 0600 in a directory created 0700, through a
// temporary file renamed over the old one, so a reader sees either the old
// or the new file and never half of one. Two logins running at the same
// moment may lose one of their updates; the session itself stays valid on
// the server.

// configDirEnv names the directory of the login file, replacing
// <user config dir>/parley.
const configDirEnv = "PARLEY_CONFIG_DIR"

// storedLogin is one cluster's (or, from older versions, one server's)
// entry in the login file.
type storedLogin struct {
	Username  string `json:"username"`
	Token     string `json:"token"`
	ExpiresAt int64  `json:"expires_at"` // Unix ms, as the server sent it
	// Servers are the base URLs (loginKey spelling) the login serves; only
	// in entries keyed by cluster.
	Servers []string `json:"servers,omitempty"`
}

// clusterPrefix starts the login file's keys of logins kept per cluster.
const clusterPrefix = "cluster:"

// expired reports whether the login's session has expired by now (Unix ms).
func (l storedLogin) expired(nowMs int64) bool { return l.ExpiresAt > 0 && nowMs >= l.ExpiresAt }

// loginFilePath returns where the login file is, from $PARLEY_CONFIG_DIR or
// the user's configuration directory.
func loginFilePath(getenv func(string) string) (string, error) {
	if d := getenv(configDirEnv); d != "" {
		return filepath.Join(d, "logins.json"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no place for the login file (%v); set $%s", err, configDirEnv)
	}
	return filepath.Join(d, "parley", "logins.json"), nil
}

// loginKey is the login file's key for the server at base: scheme and host
// in lower case, path without a trailing slash, so that spellings of one URL
// share a login.
func loginKey(base string) string {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || u.Host == "" {
		return strings.TrimRight(base, "/")
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimRight(u.Path, "/")
}

// readLogins reads the login file at path; a missing or empty file holds no
// logins.
func readLogins(path string) (map[string]storedLogin, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]storedLogin{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read login file: %w", err)
	}
	logins := map[string]storedLogin{}
	if len(strings.TrimSpace(string(data))) == 0 {
		return logins, nil
	}
	if err := json.Unmarshal(data, &logins); err != nil {
		return nil, fmt.Errorf("login file %s is damaged (%v); delete it and log in again", path, err)
	}
	return logins, nil
}

// writeLogins replaces the login file at path with logins, atomically:
// a temporary file in the same directory (mode 0600), synced, then renamed.
func writeLogins(path string, logins map[string]storedLogin) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create login directory: %w", err)
	}
	data, err := json.MarshalIndent(logins, "", "  ")
	if err != nil {
		return fmt.Errorf("encode logins: %w", err)
	}
	f, err := os.CreateTemp(dir, ".logins-*.tmp")
	if err != nil {
		return fmt.Errorf("write login file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("write login file: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("write login file: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write login file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write login file: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write login file: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil { // make the rename durable where the OS allows
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// lookupLogin returns the stored login for server; ok is false when there
// is none.
func lookupLogin(e *Env, server string) (l storedLogin, ok bool, err error) {
	path, err := loginFilePath(e.getenv)
	if err != nil {
		return storedLogin{}, false, err
	}
	logins, err := readLogins(path)
	if err != nil {
		return storedLogin{}, false, err
	}
	_, l, ok = findLogin(logins, server, resolveHost)
	return l, ok && l.Token != "", nil
}

// storeLogin stores l as the login of the cluster with id clusterID,
// serving servers (base URLs), in place of that cluster's previous login
// and of older logins kept for any of those URLs. Without a cluster id it
// stores l for server's URL alone, as older versions did.
func storeLogin(e *Env, server, clusterID string, servers []string, l storedLogin) error {
	path, err := loginFilePath(e.getenv)
	if err != nil {
		return err
	}
	logins, err := readLogins(path)
	if err != nil {
		return err
	}
	if clusterID == "" {
		l.Servers = nil
		logins[loginKey(server)] = l
		return writeLogins(path, logins)
	}
	l.Servers = nil
	for _, s := range append([]string{server}, servers...) {
		if k := loginKey(s); !slices.Contains(l.Servers, k) {
			l.Servers = append(l.Servers, k)
			delete(logins, k) // an older login of that URL
		}
	}
	logins[clusterPrefix+clusterID] = l
	return writeLogins(path, logins)
}

// updateLogin stores l as the login for server's URL alone (the form used
// when the cluster is not known), or, when l is nil, removes the login that
// server finds (its cluster's, or its URL's). It reports whether there was
// a login before.
func updateLogin(e *Env, server string, l *storedLogin) (had bool, err error) {
	path, err := loginFilePath(e.getenv)
	if err != nil {
		return false, err
	}
	logins, err := readLogins(path)
	if err != nil {
		return false, err
	}
	if l != nil {
		_, had = logins[loginKey(server)]
		logins[loginKey(server)] = *l
		return had, writeLogins(path, logins)
	}
	key, _, had := findLogin(logins, server, resolveHost)
	if !had {
		return false, nil
	}
	delete(logins, key)
	return true, writeLogins(path, logins)
}

// findLogin returns the key and entry of the login server uses: the
// cluster login listing server's URL, else the older login kept for that
// URL, else the cluster login listing a server of the same scheme and port
// whose host is one of the IP addresses server's host resolves to (resolve
// is asked only then). Cluster logins are searched in key order.
func findLogin(logins map[string]storedLogin, server string, resolve func(host string) []string) (key string, l storedLogin, ok bool) {
	want := loginKey(server)
	var clusters []string
	for k := range logins {
		if strings.HasPrefix(k, clusterPrefix) {
			clusters = append(clusters, k)
		}
	}
	slices.Sort(clusters)
	for _, k := range clusters {
		if slices.Contains(logins[k].Servers, want) {
			return k, logins[k], true
		}
	}
	if l, ok := logins[want]; ok {
		return want, l, true
	}
	if len(clusters) == 0 {
		return "", storedLogin{}, false
	}
	u, err := url.Parse(want)
	if err != nil || u.Host == "" || net.ParseIP(u.Hostname()) != nil {
		return "", storedLogin{}, false // an IP address was matched above
	}
	for _, ip := range resolve(u.Hostname()) {
		spelled := u.Scheme + "://" + net.JoinHostPort(ip, portOf(u)) + u.Path
		for _, k := range clusters {
			for _, s := range logins[k].Servers {
				if su, err := url.Parse(s); err == nil && su.Scheme+"://"+net.JoinHostPort(su.Hostname(), portOf(su))+su.Path == spelled {
					return k, logins[k], true
				}
			}
		}
	}
	return "", storedLogin{}, false
}

// portOf returns u's port, or its scheme's default.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// resolveHost returns the IP addresses of host, none when it does not
// resolve within two seconds.
func resolveHost(host string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ips, _ := net.DefaultResolver.LookupHost(ctx, host)
	return ips
}

// clusterServers returns the base URLs a login made on base serves: base,
// base with its host's IP addresses, and the advertised HTTP addresses of
// the cluster's alive nodes (nodeURL: in base's scheme). Only alive nodes
// are listed: another may be gone and its address taken by someone else.
func clusterServers(base string, st *client.ClusterStatus, resolve func(host string) []string) []string {
	out := []string{loginKey(base)}
	add := func(s string) {
		if s != "" && !slices.Contains(out, loginKey(s)) {
			out = append(out, loginKey(s))
		}
	}
	u, err := url.Parse(out[0])
	if err != nil || u.Host == "" {
		return out
	}
	if net.ParseIP(u.Hostname()) == nil {
		for _, ip := range resolve(u.Hostname()) {
			add(u.Scheme + "://" + net.JoinHostPort(ip, portOf(u)) + u.Path)
		}
	}
	if st != nil {
		for _, addr := range st.AliveAddrs() {
			add(nodeURL(u, addr))
		}
	}
	return out
}

// loginHint names the server a client command talked to and the user it
// signed in as ("" when unknown), for the advice printed with a 401.
type loginHint struct {
	server, username string
	// client is the command's client, when it made one (the last made):
	// its Server is the node that answered, which a fallback makes another
	// than server.
	client atomic.Pointer[client.Client]
}

// signIn completes o.Token from the stored login for o.Server (else for
// the first of the rest of a comma-separated --server that has one) when
// neither --token nor $PARLEY_TOKEN gave one (flag, then variable, then
// login file), adds the login's nodes to the fallbacks, and notes on e
// what to suggest should the server answer 401.
func (o *clientOptions) signIn(e *Env) error {
	hint := &loginHint{server: o.Server}
	e.login, o.hint = hint, hint
	l, ok, err := lookupLogin(e, o.Server)
	for _, f := range o.fallbacks { // the rest of a comma-separated --server
		if err == nil && !ok {
			l, ok, err = lookupLogin(e, f)
		}
	}
	if o.Token != "" {
		if err == nil && ok && l.Token == o.Token {
			hint.username = l.Username
			o.addFallbacks(l)
		}
		return nil // the login file does not matter: not even a damaged one
	}
	if err != nil {
		return err
	}
	if ok {
		o.Token, hint.username = l.Token, l.Username
		o.addFallbacks(l)
	}
	return nil
}

// addFallbacks adds the nodes the login l was made on to the servers tried
// when --server cannot be reached: they are the same cluster, and they
// take its token.
func (o *clientOptions) addFallbacks(l storedLogin) {
	for _, s := range l.Servers {
		o.addFallback(s)
	}
}

// advice returns what to append to the error line of err: how to sign
// in, when the server refused the command's credentials.
func (h *loginHint) advice(err error) string {
	ce, ok := errors.AsType[*client.Error](err)
	if h == nil || ((!ok || ce.Status != 401) && !errors.Is(err, errSessionEnded)) {
		return ""
	}
	user := h.username
	if user == "" {
		user = "USERNAME"
	}
	server := h.server
	if c := h.client.Load(); c != nil {
		server = c.Server()
	}
	return fmt.Sprintf("; run: parley user login %s --server %s", user, server)
}

// signIn completes o.Token, when neither --token nor $PARLEY_TOKEN gave
// one, from the stored login of the first of o.Servers that has one (the
// nodes of a cluster share sessions).
func (o *BenchOptions) signIn(e *Env) error {
	co := clientOptions{Server: o.Servers[0], Token: o.Token}
	if o.Token == "" {
		for _, s := range o.Servers {
			if _, ok, err := lookupLogin(e, s); err != nil || ok {
				co.Server = s
				break
			}
		}
	}
	if err := co.signIn(e); err != nil {
		return err
	}
	o.Token = co.Token
	return nil
}

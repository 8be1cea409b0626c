package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/parley-chat/parley/client"
)

// The login file keeps one session per server, so client commands need
// neither --token nor $PARLEY_TOKEN after `parley user login`. It lives at
// $PARLEY_CONFIG_DIR/logins.json, or else <user config dir>/parley/logins.json
// (os.UserConfigDir: $XDG_CONFIG_HOME or ~/.config on Linux), and holds a
// JSON object from server base URL to login:
//
//	{
//	  "http://localhost:7070": {
//	    "username": "alice",
//	    "token": "…",
//	    "expires_at": 1767225600000
//	  }
//	}
//
// The file is written with mode 0600 in a directory created 0700, through a
// temporary file renamed over the old one, so a reader sees either the old
// or the new file and never half of one. Two logins running at the same
// moment may lose one of their updates; the session itself stays valid on
// the server.

// configDirEnv names the directory of the login file, replacing
// <user config dir>/parley.
const configDirEnv = "PARLEY_CONFIG_DIR"

// storedLogin is one server's entry in the login file.
type storedLogin struct {
	Username  string `json:"username"`
	Token     string `json:"token"`
	ExpiresAt int64  `json:"expires_at"` // Unix ms, as the server sent it
}

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
	l, ok = logins[loginKey(server)]
	return l, ok && l.Token != "", nil
}

// updateLogin stores l as the login for server, or removes the server's
// login when l is nil. It reports whether there was a login before.
func updateLogin(e *Env, server string, l *storedLogin) (had bool, err error) {
	path, err := loginFilePath(e.getenv)
	if err != nil {
		return false, err
	}
	logins, err := readLogins(path)
	if err != nil {
		return false, err
	}
	key := loginKey(server)
	_, had = logins[key]
	if l == nil {
		if !had {
			return false, nil
		}
		delete(logins, key)
	} else {
		logins[key] = *l
	}
	return had, writeLogins(path, logins)
}

// loginHint names the server a client command talked to and the user it
// signed in as ("" when unknown), for the advice printed with a 401.
type loginHint struct {
	server, username string
}

// signIn completes o.Token from the stored login for o.Server when neither
// --token nor $PARLEY_TOKEN gave one (flag, then variable, then login
// file), and notes on e what to suggest should the server answer 401.
func (o *clientOptions) signIn(e *Env) error {
	hint := &loginHint{server: o.Server}
	e.login = hint
	l, ok, err := lookupLogin(e, o.Server)
	if o.Token != "" {
		if err == nil && ok && l.Token == o.Token {
			hint.username = l.Username
		}
		return nil // the login file does not matter: not even a damaged one
	}
	if err != nil {
		return err
	}
	if ok {
		o.Token, hint.username = l.Token, l.Username
	}
	return nil
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
	return fmt.Sprintf("; run: parley user login %s --server %s", user, h.server)
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

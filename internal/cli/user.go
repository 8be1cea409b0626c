package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/parley-chat/parley/client"
)

// passwordHelp explains the password flags in the help of register and
// login.
const passwordHelp = `
The password is read from the terminal, or with --password-stdin from the
first line of standard input (for scripts: never put it on the command
line). The terminal does not show the password as it is typed.`

// runUserRegister is `parley user register USERNAME`.
func runUserRegister(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var fromStdin, noLogin bool
	fs := newFlagSet(path, "USERNAME [flags]", `
Create a user, print "registered USERNAME" ("(admin)" for the first user
of a cluster, who becomes its administrator), then log in as the new user
and store the login, as parley user login does. It does not log in with
--no-login, nor when registering on someone's behalf: with --token or
$PARLEY_TOKEN given, or while another user's stored login for the cluster
is still valid (an admin's, when registration is closed: it is kept, and a
note says how to switch). When registration is closed, only a signed-in
admin may register users: the admin's session comes from --token,
$PARLEY_TOKEN or the stored login, as for every client command.
`+passwordHelp)
	addClientFlags(fs, &co)
	fs.BoolVar(&fromStdin, "password-stdin", false, "read the password from the first line of standard input")
	fs.BoolVar(&noLogin, "no-login", false, "only create the user: do not log in as it")
	pos, err := parseClientFlags(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	password, err := readPassword(e, path, pos[0], fromStdin, true)
	if err != nil {
		return err
	}
	onBehalf := co.Token != "" // --token or $PARLEY_TOKEN: someone else's session
	var stored storedLogin
	hasStored := false
	if co.Token == "" { // an admin's stored login, if any; a damaged file only loses that
		if l, ok, lerr := lookupLogin(e, co.Server); lerr == nil && ok {
			co.Token, stored, hasStored = l.Token, l, true
		}
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	c := co.newClient()
	var u client.User
	rctx := client.WithIdempotencyKey(ctx, randomKey()) // one key for every attempt
	register := func() (err error) {
		u, err = c.Register(rctx, pos[0], password)
		return err
	}
	err = retry(ctx, register)
	if ce, ok := errors.AsType[*client.Error](err); ok && ce.Status == 401 && hasStored {
		// The stored session has ended; it was only needed when registration
		// is closed, so try as anyone would.
		c.SetToken("")
		hasStored = false
		err = retry(ctx, register)
	}
	if err != nil {
		return err
	}
	admin := ""
	if u.Admin {
		admin = " (admin)"
	}
	fmt.Fprintf(e.Stdout, "registered %s%s\n", termSafe(u.Username), admin)
	switch {
	case noLogin || onBehalf:
		return nil
	case hasStored && !strings.EqualFold(stored.Username, u.Username) && !stored.expired(time.Now().UnixMilli()):
		fmt.Fprintf(e.Stderr, "note: still logged in as %s; run: parley user login %s --server %s\n",
			termSafe(stored.Username), termSafe(u.Username), co.Server)
		return nil
	}
	return logIn(ctx, e, &co, u.Username, password)
}

// runUserLogin is `parley user login USERNAME`.
func runUserLogin(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var fromStdin bool
	fs := newFlagSet(path, "USERNAME [flags]", `
Open a session on the server and store it in the login file for the whole
cluster, replacing the cluster's previous login: $PARLEY_CONFIG_DIR/logins.json,
or else parley/logins.json in the user's configuration directory (mode
0600). Client commands given neither --token nor $PARLEY_TOKEN sign in with
it on any node of the cluster alive at login time, under any spelling of
its address that resolves to the same IP address and port (localhost or
127.0.0.1), in the same scheme.
`+passwordHelp)
	addServerFlags(fs, &co)
	fs.BoolVar(&fromStdin, "password-stdin", false, "read the password from the first line of standard input")
	pos, err := parseClientFlags(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	password, err := readPassword(e, path, pos[0], fromStdin, false)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	return logIn(ctx, e, &co, pos[0], password)
}

// logIn opens a session for username on co's server, learns the cluster
// it belongs to (GET /api/v1/cluster, signed in with the new session) and
// stores the login for the cluster's nodes; a server that cannot say has
// it stored for its URL alone, with a warning.
func logIn(ctx context.Context, e *Env, co *clientOptions, username, password string) error {
	c := co.clientOf(co.Server, "")
	var s client.Session
	err := retry(ctx, func() (err error) {
		s, err = c.Login(ctx, username, password)
		return err
	})
	if err != nil {
		return err
	}
	c.SetToken(s.Token)
	var st *client.ClusterStatus
	clusterID, servers := "", []string(nil)
	err = retry(ctx, func() (err error) {
		st, err = c.Cluster(ctx)
		return err
	})
	if err == nil && st.ClusterID != "" {
		clusterID, servers = st.ClusterID, clusterServers(co.Server, st, resolveHost)
	} else {
		fmt.Fprintf(e.Stderr, "warning: cannot learn the cluster of %s (%s): the login serves that URL only\n", co.Server, describeOr(err, "no cluster id"))
	}
	l := storedLogin{Username: s.Username, Token: s.Token, ExpiresAt: s.ExpiresAt}
	if err := storeLogin(e, co.Server, clusterID, servers, l); err != nil {
		_ = c.Logout(ctx) // a session nobody can use should not linger
		return fmt.Errorf("logged in, but could not store the session: %w", err)
	}
	fmt.Fprintf(e.Stdout, "logged in as %s on %s (expires %s)\n", termSafe(s.Username), co.Server, formatMs(s.ExpiresAt))
	return nil
}

// describeOr describes err, or says what when err is nil.
func describeOr(err error, what string) string {
	if err == nil {
		return what
	}
	return describe(err)
}

// runUserLogout is `parley user logout`.
func runUserLogout(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "[flags]", `
End the session on the server and remove the stored login it uses (the
login of its cluster, for every node). The session ended is the one client
commands use (--token, $PARLEY_TOKEN or the stored login), and the stored
one as well. When the server cannot be reached, the stored login is removed
anyway and the session lapses when it expires.`)
	addClientFlags(fs, &co)
	if _, err := parseClientFlags(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	stored, hasStored, err := lookupLogin(e, co.Server)
	if err != nil {
		return err
	}
	tokens := []string{co.Token}
	switch {
	case co.Token == "" && !hasStored:
		return fmt.Errorf("not logged in on %s", co.Server)
	case co.Token == "":
		tokens = []string{stored.Token}
	case hasStored && stored.Token != co.Token:
		tokens = append(tokens, stored.Token)
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	for _, tok := range tokens {
		c := co.clientOf(co.Server, tok)
		err := retry(ctx, func() error { return c.Logout(ctx) })
		if ce, ok := errors.AsType[*client.Error](err); ok && ce.Status == 401 {
			err = nil // the session had ended already
		}
		if err != nil {
			fmt.Fprintf(e.Stderr, "warning: the server did not end the session (%s); it stays valid until it expires\n", describe(err))
		}
	}
	if hasStored {
		if _, err := updateLogin(e, co.Server, nil); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.Stdout, "logged out of %s\n", co.Server)
	return nil
}

// runUserWhoami is `parley user whoami`.
func runUserWhoami(_ context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "[flags]", `
Print the username of the stored login for the server (the login of its
cluster). The server is not asked: a session ended elsewhere still shows.`)
	addServerFlags(fs, &co)
	if _, err := parseClientFlags(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	l, ok, err := lookupLogin(e, co.Server)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("not logged in on %s; run: parley user login USERNAME --server %s", co.Server, co.Server)
	}
	fmt.Fprintln(e.Stdout, termSafe(l.Username))
	if l.ExpiresAt > 0 && time.Now().UnixMilli() >= l.ExpiresAt {
		fmt.Fprintf(e.Stderr, "warning: the session expired %s; run: parley user login %s --server %s\n", formatMs(l.ExpiresAt), termSafe(l.Username), co.Server)
	}
	return nil
}

// formatMs renders a Unix millisecond time for people, in local time.
func formatMs(ms int64) string {
	return time.UnixMilli(ms).Format(time.RFC3339)
}

// maxPasswordLine bounds the password line read from standard input.
const maxPasswordLine = 4096

// readPassword returns the password for username: the first line of
// standard input with --password-stdin, else typed at the terminal after a
// prompt on stderr (twice when confirm is set). Standard input that is not
// a terminal needs --password-stdin, so a script never waits on a prompt.
func readPassword(e *Env, path, username string, fromStdin, confirm bool) (string, error) {
	in := bufio.NewReader(e.Stdin)
	if fromStdin {
		return readPasswordLine(in)
	}
	if !isTerminal(e.Stdin) {
		return "", usagef(path, "standard input is not a terminal: give the password on it with --password-stdin")
	}
	return promptPassword(hiddenInput{e.Stdin.(*os.File)}, e.Stderr, username, confirm)
}

// hiddenInput reads password lines from a terminal without echoing them.
type hiddenInput struct{ f *os.File }

func (h hiddenInput) readLine() (string, error) {
	b, err := term.ReadPassword(int(h.f.Fd()))
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	if len(b) == 0 {
		return "", errors.New("empty password")
	}
	return string(b), nil
}

// lineReader reads one password line.
type lineReader interface{ readLine() (string, error) }

// plainInput reads password lines from a non-terminal stream (tests).
type plainInput struct{ in *bufio.Reader }

func (p plainInput) readLine() (string, error) { return readPasswordLine(p.in) }

// promptPassword asks for username's password on w and reads it from in,
// asking a second time when confirm is set.
func promptPassword(in lineReader, w io.Writer, username string, confirm bool) (string, error) {
	fmt.Fprintf(w, "Password for %s: ", username)
	p, err := in.readLine()
	fmt.Fprintln(w)
	if err != nil || !confirm {
		return p, err
	}
	fmt.Fprint(w, "Repeat the password: ")
	again, err := in.readLine()
	fmt.Fprintln(w)
	if err != nil {
		return "", err
	}
	if again != p {
		return "", errors.New("the passwords differ")
	}
	return p, nil
}

// readPasswordLine reads one line, without its line ending. An empty
// password is refused here; the server judges the rest.
func readPasswordLine(in *bufio.Reader) (string, error) {
	var line []byte
	for {
		b, err := in.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		if b == '\n' {
			break
		}
		if len(line) == maxPasswordLine {
			return "", fmt.Errorf("read password: the line is longer than %d bytes", maxPasswordLine)
		}
		line = append(line, b)
	}
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if len(line) == 0 {
		return "", errors.New("no password given (an empty line or no input)")
	}
	return string(line), nil
}

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok || f == nil {
		return false
	}
	return term.IsTerminal(int(f.Fd())) // not just a character device: /dev/null is one too
}

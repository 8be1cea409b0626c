package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

// signUpAs registers user (password user+"-password") on the server at url
// and returns a session token.
func signUpAs(t *testing.T, url, user string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(url)
	if _, err := c.Register(ctx, user, user+"-password"); err != nil {
		t.Fatalf("register %s on %s: %v", user, url, err)
	}
	s, err := c.Login(ctx, user, user+"-password")
	if err != nil {
		t.Fatalf("login %s on %s: %v", user, url, err)
	}
	return s.Token
}

// cliAs runs parley commands against one server as one user.
type cliAs struct {
	t          *testing.T
	ctx        context.Context
	url, token string
}

// run runs args (with --server and --token added) reading stdin.
func (c cliAs) run(stdin string, args ...string) result {
	return run(c.ctx, nil, stdin, append(args, "--server", c.url, "--token", c.token)...)
}

// ok runs args and fails the test unless the command exits 0.
func (c cliAs) ok(args ...string) string {
	c.t.Helper()
	r := c.run("", args...)
	if r.code != 0 {
		c.t.Fatalf("parley %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// fails runs args and checks that it exits 1 naming the error code.
func (c cliAs) fails(code string, args ...string) {
	c.t.Helper()
	r := c.run("", args...)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: ") || !strings.Contains(r.stderr, "("+code+")") {
		c.t.Errorf("parley %s = exit %d, stderr %q; want exit 1 and an error line with (%s)", strings.Join(args, " "), r.code, r.stderr, code)
	}
}

func TestRoomCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	alice := cliAs{t, ctx, url, signUpAs(t, url, "alice")}
	bob := cliAs{t, ctx, url, signUpAs(t, url, "bob")}
	carol := cliAs{t, ctx, url, signUpAs(t, url, "carol")}

	t.Run("create", func(t *testing.T) {
		if got := alice.ok("room", "create", "lobby"); got != "created public room lobby\n" {
			t.Errorf("create printed %q", got)
		}
		alice.fails("conflict", "room", "create", "lobby")
		if r := alice.run("sesame-pw\n", "room", "create", "vault", "--private", "--password-stdin"); r.code != 0 || r.stdout != "created private room vault\n" {
			t.Errorf("create private = %+v", r)
		}
		if r := alice.run("", "room", "create", "nopw", "--password-stdin"); r.code != 2 {
			t.Errorf("--password-stdin without --private = %+v, want a usage error", r)
		}
	})

	t.Run("join", func(t *testing.T) {
		if r := bob.run("wrong-pw\n", "room", "join", "vault", "--password-stdin"); r.code != 1 || !strings.Contains(r.stderr, "(forbidden)") {
			t.Errorf("join with a wrong password = %+v, want forbidden", r)
		}
		if r := bob.run("", "room", "join", "vault"); r.code != 1 || !strings.Contains(r.stderr, "--password-stdin") {
			t.Errorf("join of a private room without a terminal = %+v, want advice to use --password-stdin", r)
		}
		if r := bob.run("sesame-pw\n", "room", "join", "vault", "--password-stdin"); r.code != 0 || r.stdout != "joined vault (2 members)\n" {
			t.Errorf("join with the password = %+v", r)
		}
		bob.ok("room", "join", "lobby")
		carol.ok("room", "join", "lobby")
		bob.fails("not_found", "room", "join", "nowhere")
	})

	t.Run("post and history", func(t *testing.T) {
		if got := alice.ok("room", "post", "lobby", "hello all"); !regexp.MustCompile(`^posted #\d+\n$`).MatchString(got) {
			t.Errorf("post printed %q", got)
		}
		alice.ok("room", "post", "lobby", "psst", "--to", "bob")
		if r := alice.run("from stdin\n", "room", "post", "lobby", "-"); r.code != 0 {
			t.Errorf("post from stdin = %+v", r)
		}
		bobSees := bob.ok("room", "history", "lobby")
		for _, want := range []string{"* bob joined", "alice: hello all", "alice -> bob (whisper): psst", "alice: from stdin"} {
			if !strings.Contains(bobSees, want) {
				t.Errorf("bob's history lacks %q:\n%s", want, bobSees)
			}
		}
		carolSees := carol.ok("room", "history", "lobby")
		if strings.Contains(carolSees, "psst") || !strings.Contains(carolSees, "(hidden)") {
			t.Errorf("carol's history shows the whisper to bob, or no hidden event:\n%s", carolSees)
		}
		lines := strings.Split(strings.TrimSpace(bob.ok("room", "history", "lobby", "--json", "--limit", "2")), "\n")
		var ev client.Event
		if len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &ev) != nil || ev.Text != "from stdin" || ev.Kind != "message" {
			t.Errorf("history --json --limit 2 = %q", lines)
		}
		after := bob.ok("room", "history", "lobby", "--after", "1")
		if strings.Contains(after, "#1 ") || !strings.Contains(after, "#2 ") {
			t.Errorf("history --after 1:\n%s", after)
		}
		bob.fails("not_found", "room", "history", "nowhere")
		carol.fails("forbidden", "room", "post", "vault", "let me in")
		carol.fails("forbidden", "room", "history", "vault")
	})

	t.Run("list and members", func(t *testing.T) {
		list := bob.ok("room", "list")
		if !regexp.MustCompile(`(?m)^\* lobby\s+public\s+3\s`).MatchString(list) || !regexp.MustCompile(`(?m)^\* vault\s+private\s+2\s`).MatchString(list) {
			t.Errorf("bob's room list:\n%s", list)
		}
		if strings.Contains(carol.ok("room", "list"), "vault") {
			t.Error("carol sees the private room she is not in")
		}
		var rooms []client.RoomSummary
		if err := json.Unmarshal([]byte(bob.ok("room", "list", "--json")), &rooms); err != nil || len(rooms) != 2 {
			t.Errorf("room list --json = %+v (%v)", rooms, err)
		}
		members := alice.ok("room", "members", "lobby")
		for _, m := range []string{"alice", "bob", "carol"} {
			if !regexp.MustCompile(`(?m)^` + m + `\s+(owner|member)\s+(yes|no)\s`).MatchString(members) {
				t.Errorf("members lack %s:\n%s", m, members)
			}
		}
	})

	t.Run("leave and delete", func(t *testing.T) {
		if got := carol.ok("room", "leave", "lobby"); got != "left lobby\n" {
			t.Errorf("leave printed %q", got)
		}
		carol.fails("forbidden", "room", "post", "lobby", "still here?")
		bob.fails("forbidden", "room", "delete", "lobby")
		if got := alice.ok("room", "delete", "lobby"); got != "deleted room lobby\n" {
			t.Errorf("delete printed %q", got)
		}
		alice.fails("not_found", "room", "history", "lobby")
	})
}

package cli

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

// chatRun is a `parley chat` running with scripted input.
type chatRun struct {
	t           *testing.T
	in          *io.PipeWriter
	out, errOut *syncBuffer
	done        chan int
}

// startChat runs `parley chat` with args, its standard input a pipe the
// test types into.
func startChat(t *testing.T, args ...string) *chatRun {
	t.Helper()
	pr, pw := io.Pipe()
	c := &chatRun{t: t, in: pw, out: &syncBuffer{}, errOut: &syncBuffer{}, done: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		c.done <- Run(ctx, &Env{Stdin: pr, Stdout: c.out, Stderr: c.errOut}, append([]string{"chat"}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		_ = pw.Close()
	})
	return c
}

// typeLine types one line into the chat.
func (c *chatRun) typeLine(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("type %q: %v", line, err)
	}
}

// waitOut waits until the chat's output matches re.
func (c *chatRun) waitOut(re string) []string {
	c.t.Helper()
	return waitFor(c.t, c.out, c.errOut, regexp.MustCompile(re), 30*time.Second)
}

// quit types /quit and returns the exit code.
func (c *chatRun) quit() int {
	c.t.Helper()
	c.typeLine("/quit")
	select {
	case code := <-c.done:
		return code
	case <-time.After(30 * time.Second):
		c.t.Fatalf("chat did not end after /quit; output:\n%s", c.out)
		return -1
	}
}

func TestChat_Commands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	aliceTok := signUpAs(t, url, "alice")
	bob := client.New(url, client.WithToken(signUpAs(t, url, "bob")))

	t.Run("a missing room is not created without --create", func(t *testing.T) {
		r := run(ctx, nil, "", "chat", "lobyb", "--server", url, "--token", aliceTok)
		if r.code != 1 || !strings.Contains(r.stderr, "no room lobyb; check its name, or create it with --create") {
			t.Errorf("chat in a missing room = %+v, want refused naming --create", r)
		}
		if _, err := bob.JoinRoom(ctx, "lobyb", ""); !isNotFound(err) {
			t.Errorf("join lobyb after the refused chat: %v, want not found", err)
		}
	})

	chat := startChat(t, "lobby", "--server", url, "--token", aliceTok, "--create")
	chat.waitOut(`-- created room lobby\n`)
	chat.waitOut(`-- joined lobby on ` + regexp.QuoteMeta(url) + ` \(1 member, 1 node known\)\. Type /help for commands, /quit to leave\.`)
	if _, err := bob.JoinRoom(ctx, "lobby", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Post(ctx, "lobby", "hi from bob", client.PostOptions{}); err != nil {
		t.Fatal(err)
	}
	chat.waitOut(`\[\d\d:\d\d:\d\d #2\] \* bob joined\n\[\d\d:\d\d:\d\d #3\] bob: hi from bob\n`)

	chat.typeLine("hello everyone")
	chat.waitOut(`\] alice: hello everyone\n`)
	chat.typeLine("/wsp bob psst, bob")
	chat.waitOut(`\] alice -> bob \(whisper\): psst, bob\n`)
	evs, err := bob.History(ctx, "lobby", client.HistoryOptions{})
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Kind != "whisper" || evs[len(evs)-1].Text != "psst, bob" {
		t.Errorf("bob's history ends %+v (%v), want the whisper", evs, err)
	}
	chat.typeLine("WSP bob") // the seed's uppercase word still works, and is never posted
	chat.waitOut(`-- error: usage: /wsp USER\[,USER\.\.\.\] TEXT\n`)

	chat.typeLine("/put colour deep blue")
	chat.waitOut(`-- stored colour \(version 1\)\n`)
	chat.typeLine("GET colour")
	chat.waitOut(`-- colour = deep blue\n`)
	chat.typeLine("/put colour")
	chat.waitOut(`-- error: usage: /put KEY VALUE \(a value is needed; /del KEY deletes\)\n`)
	chat.typeLine("/get colour")
	chat.waitOut(`(?s)a value is needed.*-- colour = deep blue\n`)
	chat.typeLine("/del colour")
	chat.waitOut(`-- deleted colour\n`)
	chat.typeLine("/get colour")
	chat.waitOut(`-- colour is not set\n`)

	chat.typeLine("/who")
	chat.waitOut(`-- (nobody online in lobby \(2 members: alice, bob\)|online in lobby \(\d of 2 members\): .+)\n`)
	chat.typeLine("help")
	chat.waitOut(`-- not posted: did you mean /help\? Commands start with a slash; /say help posts the word\.\n`)
	chat.typeLine("/HELP")
	chat.waitOut(`-- +/wsp USER\[,USER\.\.\.\] TEXT +whisper`)
	chat.typeLine("/frobnicate")
	chat.waitOut(`-- error: unknown command /frobnicate`)

	chat.typeLine("/join ops")
	chat.waitOut(`-- created room ops\n\[[\d:]+ #1\] \* alice joined\n-- now in ops \(1 member\)\n`)
	chat.typeLine("in ops")
	chat.waitOut(`\] alice: in ops\n`)
	chat.typeLine("/rooms")
	chat.waitOut(`-- rooms you can see \(\* you are a member\):\n-- \* lobby +2 members, \d online\n-- \* ops +1 member, \d online \(here\)\n`)
	chat.typeLine("/leave")
	chat.waitOut(`-- left ops; /join ROOM to chat in another room, /quit to end\n`)
	chat.typeLine("anyone?")
	chat.waitOut(`-- error: not in a room: /join ROOM first\n`)
	chat.typeLine("/join lobby")
	chat.waitOut(`-- now in lobby \(2 members\)\n`)
	if code := chat.quit(); code != 0 {
		t.Errorf("chat exit %d, stderr %s", code, chat.errOut)
	}
	if !strings.HasSuffix(chat.out.String(), "-- bye\n") {
		t.Errorf("chat output does not end with bye:\n%s", chat.out)
	}
	if n := strings.Count(chat.out.String(), "alice: hello everyone"); n != 2 {
		t.Errorf("own message shown %d times, want twice: once live, once in lobby's history on joining it again", n)
	}
	evs, err = bob.History(ctx, "lobby", client.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind == "message" && ev.Sender == "alice" && ev.Text != "hello everyone" {
			t.Errorf("the chat posted %q; only the plain message should be posted", ev.Text)
		}
	}

	t.Run("history on joining", func(t *testing.T) {
		again := startChat(t, "lobby", "--server", url, "--token", aliceTok, "--history", "2")
		again.waitOut(`\] alice: hello everyone\n.*alice -> bob \(whisper\): psst, bob\n-- joined lobby`)
		if strings.Contains(again.out.String(), "hi from bob") {
			t.Errorf("--history 2 showed older events:\n%s", again.out)
		}
		if code := again.quit(); code != 0 {
			t.Errorf("exit %d", code)
		}
	})

	t.Run("a private room it cannot join", func(t *testing.T) {
		if _, err := bob.CreateRoom(ctx, client.RoomSpec{Name: "vault", Private: true, Password: "sesame-pw"}); err != nil {
			t.Fatal(err)
		}
		r := run(ctx, nil, "", "chat", "vault", "--server", url, "--token", aliceTok)
		if r.code != 1 || !strings.Contains(r.stderr, "(forbidden); join it first with: parley room join vault") {
			t.Errorf("chat in a private room = %+v, want forbidden", r)
		}
	})
}

// A chat whose session ends (here: signed out elsewhere) stops with a
// clear message instead of reconnecting.
func TestChat_SessionEnded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tok := signUpAs(t, url, "alice")
	chat := startChat(t, "lobby", "--server", url, "--token", tok, "--create")
	chat.waitOut(`-- joined lobby`)
	if err := client.New(url, client.WithToken(tok)).Logout(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-chat.done:
		if code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
	case <-ctx.Done():
		t.Fatalf("chat still running after the logout; output:\n%s", chat.out)
	}
	if !strings.Contains(chat.errOut.String(), "error: session ended: sign in again; run: parley user login") {
		t.Errorf("stderr %q, want the session-ended message with how to sign in", chat.errOut)
	}
	if strings.Contains(chat.out.String(), "-- lost") {
		t.Errorf("the chat tried to reconnect:\n%s", chat.out)
	}
}

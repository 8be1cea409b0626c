package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

func TestParseModArgs(t *testing.T) {
	for _, tc := range []struct {
		cmd, args string
		want      modAction
		err       string // a part of the error; "" for none
	}{
		{"kick", "bob", modAction{Cmd: "kick", User: "bob"}, ""},
		{"kick", "  bob   off topic, again ", modAction{Cmd: "kick", User: "bob", Reason: "off topic, again"}, ""},
		{"kick", "", modAction{}, "usage: /kick USER [REASON]"},
		{"kick", "@bob spam", modAction{Cmd: "kick", User: "bob", Reason: "spam"}, ""},
		{"kick", "@ spam", modAction{}, "usage: /kick USER [REASON]"},
		{"ban", "bob", modAction{Cmd: "ban", User: "bob"}, ""},
		{"ban", "bob spam", modAction{Cmd: "ban", User: "bob", Reason: "spam"}, ""},
		{"ban", "bob 2h30m spam and worse", modAction{Cmd: "ban", User: "bob", Duration: 150 * time.Minute, Reason: "spam and worse"}, ""},
		{"ban", "bob 90s", modAction{Cmd: "ban", User: "bob", Duration: 90 * time.Second}, ""},
		{"ban", "bob 10x spam", modAction{}, `DURATION "10x": want a positive number of whole seconds`},
		{"ban", "bob 1.5s", modAction{}, "whole seconds"},
		{"ban", "bob 0s", modAction{}, "positive"},
		{"mute", "bob 10m flooding", modAction{Cmd: "mute", User: "bob", Duration: 10 * time.Minute, Reason: "flooding"}, ""},
		{"mute", "bob", modAction{}, "usage: /mute USER DURATION [REASON] (a mute needs a DURATION, such as 10m)"},
		{"mute", "bob flooding", modAction{}, `DURATION "flooding"`},
		{"mute", "bob -5m", modAction{}, "positive"},
		{"unban", "bob", modAction{Cmd: "unban", User: "bob"}, ""},
		{"unban", "bob now", modAction{}, "usage: /unban USER"},
		{"unmute", "", modAction{}, "usage: /unmute USER"},
		{"mod", "mona", modAction{Cmd: "mod", User: "mona"}, ""},
		{"unmod", "mona x", modAction{}, "usage: /unmod USER"},
		{"invite", "ivy", modAction{Cmd: "invite", User: "ivy"}, ""},
		{"invite", "ivy\tx", modAction{}, "usage: /invite USER"},
		{"ban", "bob \x1b[2J5m", modAction{Cmd: "ban", User: "bob", Reason: "\x1b[2J5m"}, ""},
		{"mute", "bob 5\x1b[2J", modAction{}, `DURATION "5\\x1b[2J"`},
	} {
		got, err := parseModArgs(tc.cmd, tc.args)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("/%s %q = %+v, %v; want %+v", tc.cmd, tc.args, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("/%s %q = %+v, %v; want an error containing %q", tc.cmd, tc.args, got, err, tc.err)
		}
	}
}

// FuzzParseModArgs checks that any arguments parse without panicking and
// that a parsed action names one user and a duration the server takes.
func FuzzParseModArgs(f *testing.F) {
	for _, s := range []string{"bob", "bob 10m spam", "@bob 1h", "bob 1.5s", " ", "bob\t2h", "bob 9999999999h"} {
		f.Add("ban", s)
		f.Add("mute", s)
	}
	f.Fuzz(func(t *testing.T, cmd, args string) {
		if _, ok := modUsage[cmd]; !ok {
			return
		}
		a, err := parseModArgs(cmd, args)
		if err != nil {
			return
		}
		if a.Cmd != cmd || a.User == "" || strings.ContainsAny(a.User, " \t") || a.Duration < 0 || a.Duration%time.Second != 0 {
			t.Fatalf("parseModArgs(%q, %q) = %+v", cmd, args, a)
		}
		if cmd == "mute" && a.Duration == 0 {
			t.Fatalf("a mute without a duration: %+v", a)
		}
	})
}

// Every moderation command is in /help and found by its name.
func TestChatModCommands_Help(t *testing.T) {
	help := chatCommandsHelp()
	for _, name := range []string{"kick", "ban", "unban", "mute", "unmute", "mod", "unmod", "invite", "topic", "members", "modlog"} {
		c, ok := findChatCommand(strings.ToUpper(name))
		if !ok || c.name != name || !c.needsIn {
			t.Errorf("/%s: %+v %v, want a command of the room chatted in", name, c, ok)
		}
		if !strings.Contains(help, "  /"+name+" ") {
			t.Errorf("help lacks /%s:\n%s", name, help)
		}
	}
	for cmd, usage := range modUsage {
		if !strings.Contains(help, usage) {
			t.Errorf("help lacks the usage %q of /%s", usage, cmd)
		}
	}
}

// What the server sends (names, roles, reasons, topics, error messages)
// reaches the terminal with its control characters escaped.
func TestChatMod_HostileServerData(t *testing.T) {
	const esc = "\x1b]0;owned\x07\x1b[2J"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		send := func(status int, v any) {
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(v)
		}
		switch r.Method + " " + r.URL.Path {
		case "GET /api/v1/rooms/lobby/members":
			send(200, map[string]any{"members": []client.Member{{Username: "eve" + esc, Role: "member"}, {Username: "olga", Role: "owner" + esc, Online: true}}})
		case "GET /api/v1/rooms/lobby/moderation":
			send(200, client.ModerationLog{
				Bans:   []client.Sanction{{User: "bob" + esc, By: "olga" + esc, Reason: "spam" + esc}},
				Events: []client.Event{{Seq: 4, Kind: "ban", Sender: "olga", EventDetails: client.EventDetails{User: "bob" + esc, Reason: esc}}},
			})
		case "GET /api/v1/rooms/lobby":
			send(200, client.Room{Name: "lobby", Topic: "news" + esc})
		default:
			send(403, map[string]any{"error": map[string]any{"code": "forbidden", "message": "only a moderator" + esc, "retryable": false}})
		}
	}))
	defer srv.Close()
	out := &syncBuffer{}
	co := &clientOptions{Server: srv.URL, Token: "tok", Timeout: 5 * time.Second}
	s := newChatSession(&Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: io.Discard}, co, "lobby", 0, false)
	s.room = "lobby"
	for _, line := range []string{"/members", "/modlog", "/topic", "/kick bob", "/ban b" + esc} {
		s.handleLine(context.Background(), line)
	}
	got := out.String()
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Fatalf("a control character reached the terminal:\n%q", got)
	}
	for _, want := range []string{
		"  owner\\x1b]0;owned\\x07\\x1b[2J, online\n",
		"--   eve\\x1b]0;owned\\x07\\x1b[2J  member\n",
		"--   banned bob\\x1b]0;owned\\x07\\x1b[2J by olga\\x1b]0;owned\\x07\\x1b[2J for good: spam\\x1b",
		"* olga banned bob\\x1b]0;owned\\x07\\x1b[2J for good: \\x1b]0;owned",
		"-- topic of lobby: news\\x1b]0;owned",
		"-- error: only a moderator\\x1b]0;owned\\x07\\x1b[2J (forbidden)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

// The moderation commands against a node: a moderator made with /mod
// mutes, kicks, bans and lifts; /members shows the roles; a member who is
// not a moderator is refused with the server's message.
func TestChat_Moderation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	olgaTok := signUpAs(t, url, "olga")
	mona := client.New(url, client.WithToken(signUpAs(t, url, "mona")))
	bobTok := signUpAs(t, url, "bob")
	bob := client.New(url, client.WithToken(bobTok))

	olga := startChat(t, "town", "--server", url, "--token", olgaTok, "--create", "--history", "0")
	olga.waitOut(`-- joined town on `)
	for _, c := range []*client.Client{mona, bob} {
		if _, err := c.JoinRoom(ctx, "town", ""); err != nil {
			t.Fatal(err)
		}
	}
	olga.waitOut(`\* bob joined\n`)

	olga.typeLine("/mod mona")
	olga.waitOut(`-- mona is a moderator of town \(#\d+\)\n`)
	olga.waitOut(`\] \* olga made mona a moderator\n`)
	olga.typeLine("/mod mona")
	olga.waitOut(`-- nothing to change: mona is a moderator of town already\n`)
	olga.typeLine("/members")
	olga.waitOut(`-- 3 members of town:\n--   olga  owner, online\n--   mona  moderator\n--   bob   member\n`)
	olga.typeLine("/topic Town news")
	olga.waitOut(`-- topic of town set: Town news\n`)
	olga.typeLine("/topic")
	olga.waitOut(`-- topic of town: Town news\n`)

	olga.typeLine("/mute bob 10m flooding")
	olga.waitOut(`-- muted bob in town for 10m0s \(#\d+\)\n`)
	olga.waitOut(`\] \* olga muted bob until [^\n]*: flooding\n`)
	if _, err := bob.Post(ctx, "town", "hello?", client.PostOptions{}); !isForbidden(err) {
		t.Errorf("a muted bob posted: %v", err)
	}
	olga.typeLine("/mute bob soon")
	olga.waitOut(`-- error: DURATION "soon": want a positive number of whole seconds, such as 90s, 10m or 2h; usage: /mute USER DURATION \[REASON\]\n`)
	olga.typeLine("/unmute bob")
	olga.waitOut(`-- lifted the mute of bob in town \(#\d+\)\n`)
	if _, err := bob.Post(ctx, "town", "thanks", client.PostOptions{}); err != nil {
		t.Errorf("bob after the unmute: %v", err)
	}

	// bob, a plain member, is refused with the server's own message.
	bobChat := startChat(t, "town", "--server", url, "--token", bobTok, "--history", "0")
	bobChat.waitOut(`-- joined town`)
	bobChat.typeLine("/kick mona")
	bobChat.waitOut(`-- error: [^\n]*moderator[^\n]* \(forbidden\)\n`)
	bobChat.typeLine("/modlog")
	bobChat.waitOut(`(?s)moderator.*\(forbidden\)\n.*moderator[^\n]* \(forbidden\)\n`)
	if code := bobChat.quit(); code != 0 {
		t.Errorf("bob's chat exit %d", code)
	}

	olga.typeLine("/kick @bob off topic")
	olga.waitOut(`-- kicked bob in town \(#\d+\)\n`)
	olga.waitOut(`\] \* olga removed bob: off topic\n`)
	if _, err := bob.JoinRoom(ctx, "town", ""); err != nil {
		t.Fatalf("bob joins again after the kick: %v", err)
	}
	olga.typeLine("/ban bob 1h spam")
	olga.waitOut(`-- banned bob in town for 1h0m0s \(#\d+\)\n`)
	if _, err := bob.JoinRoom(ctx, "town", ""); !isForbidden(err) {
		t.Errorf("a banned bob joined: %v", err)
	}
	olga.typeLine("/invite bob")
	olga.waitOut(`-- error: [^\n]*\((invalid|conflict)\)\n`) // a public room, and bob is banned
	olga.typeLine("/modlog")
	olga.waitOut(`-- moderation of town:\n--   banned bob by olga until [^\n]*: spam\n(?s:.*)--   #\d+ \[[\d:]+\] \* olga banned bob until [^\n]*: spam\n`)
	olga.typeLine("/unban bob")
	olga.waitOut(`-- lifted the ban of bob in town \(#\d+\)\n`)
	olga.typeLine("/unban bob")
	olga.waitOut(`-- error: [^\n]*\(not_found\)\n`)
	olga.typeLine("/unmod mona")
	olga.waitOut(`-- mona is a member of town \(#\d+\)\n`)
	if code := olga.quit(); code != 0 {
		t.Errorf("exit %d, stderr %s", code, olga.errOut)
	}
}

// isForbidden reports whether err is the server's 403.
func isForbidden(err error) bool {
	ce, ok := errors.AsType[*client.Error](err)
	return ok && ce.Status == http.StatusForbidden
}

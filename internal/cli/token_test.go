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

func TestTokenCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	alice := cliAs{t, ctx, url, signUpAs(t, url, "alice")}
	alice.ok("room", "create", "general")

	r := alice.run("", "token", "create", "--name", "ci bot", "--scope", "write", "--room", "general", "--expires", "30d")
	if r.code != 0 {
		t.Fatalf("token create: exit %d, stderr %q", r.code, r.stderr)
	}
	secret := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(secret, "pat_alice.") || !strings.Contains(r.stderr, "write:room/general") || !strings.Contains(r.stderr, "shown only now") {
		t.Fatalf("token create printed %q, stderr %q", r.stdout, r.stderr)
	}
	bot := cliAs{t, ctx, url, secret}
	bot.ok("room", "post", "general", "hello from the bot")
	bot.fails("forbidden", "room", "create", "other")
	bot.fails("forbidden", "token", "list")

	var reader client.APIToken
	if err := json.Unmarshal([]byte(alice.ok("token", "create", "--name", "reader", "--json")), &reader); err != nil || reader.Token == "" {
		t.Fatalf("token create --json = %+v (%v)", reader, err)
	}
	readBot := cliAs{t, ctx, url, reader.Token}
	if out := readBot.ok("room", "history", "general"); !strings.Contains(out, "hello from the bot") {
		t.Errorf("a read token's history lacks the bot's post:\n%s", out)
	}
	readBot.fails("forbidden", "room", "post", "general", "hi")

	list := alice.ok("token", "list")
	if !regexp.MustCompile(`(?m)^[0-9a-f]{16}\s+ci bot\s+write:room/general\s`).MatchString(list) || !strings.Contains(list, "reader") || strings.Contains(list, "pat_") {
		t.Errorf("token list:\n%s", list)
	}
	alice.fails("invalid", "token", "create", "--name", "x", "--expires", "400d")
	if r := alice.run("", "token", "create", "--scope", "read"); r.code != 2 || !strings.Contains(r.stderr, "--name") {
		t.Errorf("create without --name = exit %d, stderr %q", r.code, r.stderr)
	}

	if got := alice.ok("token", "revoke", reader.ID); got != "revoked token "+reader.ID+"\n" {
		t.Errorf("revoke printed %q", got)
	}
	readBot.fails("unauthorized", "room", "history", "general")
	alice.fails("not_found", "token", "revoke", reader.ID)
}

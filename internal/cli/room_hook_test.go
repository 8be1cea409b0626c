package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

func TestRoomHookAndExportCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin := cliAs{t, ctx, url, signUpAs(t, url, "root")} // the first user: admin
	bob := cliAs{t, ctx, url, signUpAs(t, url, "bob")}
	alice := cliAs{t, ctx, url, signUpAs(t, url, "alice")}
	bob.ok("room", "create", "ops")
	alice.ok("room", "join", "ops")

	out := bob.ok("room", "hook", "create", "ops", "Deploy Bot")
	m := regexp.MustCompile(`^created hook ([0-9a-f]{16}) in room ops, posting as Deploy Bot\n(http\S+/api/v1/hooks/(ops\.[0-9a-f]{16})/(\S+))\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("hook create printed %q", out)
	}
	id, key, secret := m[1], m[3], m[4]
	alice.fails("forbidden", "room", "hook", "create", "ops", "mine")
	alice.fails("forbidden", "room", "hook", "list", "ops")

	if list := bob.ok("room", "hook", "list", "ops"); !strings.Contains(list, id+"  Deploy Bot  bob") || strings.Contains(list, secret) {
		t.Fatalf("hook list printed %q", list)
	}
	if _, err := client.New(url).PostHook(ctx, key, secret, "v1.2 is live", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(url).PostHook(ctx, key, secret, "not really alice", "alice"); err != nil {
		t.Fatal(err)
	}
	history := alice.ok("room", "history", "ops")
	if !strings.Contains(history, "Deploy Bot [bot]: v1.2 is live") || !strings.Contains(history, "alice [bot]: not really alice") {
		t.Fatalf("history does not show the bots as bots:\n%s", history)
	}

	t.Run("export", func(t *testing.T) {
		alice.fails("forbidden", "room", "export", "ops")
		if got := admin.ok("room", "export", "ops"); strings.Count(got, "\n") != 4 {
			t.Fatalf("the admin's export: %q", got)
		}
		lines := strings.Split(strings.TrimSuffix(bob.ok("room", "export", "ops"), "\n"), "\n")
		if len(lines) != 4 {
			t.Fatalf("export printed %d lines: %q", len(lines), lines)
		}
		var last client.Event
		if err := json.Unmarshal([]byte(lines[3]), &last); err != nil || last.Seq != 4 || last.Sender != "hook:alice" {
			t.Fatalf("last line %q: %+v %v", lines[3], last, err)
		}
		file := filepath.Join(t.TempDir(), "ops.jsonl")
		if got := bob.ok("room", "export", "ops", "--out", file); got != "exported 4 events of room ops to "+file+"\n" {
			t.Fatalf("export --out printed %q", got)
		}
		if b, err := os.ReadFile(file); err != nil || strings.Count(string(b), "\n") != 4 {
			t.Fatalf("the file: %q, %v", b, err)
		}
	})

	bob.ok("room", "hook", "revoke", "ops", id)
	if _, err := client.New(url).PostHook(ctx, key, secret, "after revoke", ""); err == nil {
		t.Fatal("a revoked hook posted")
	}
	bob.fails("not_found", "room", "hook", "revoke", "ops", id)
}

package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
)

// parley search prints what the server's search finds, one message a line;
// a bad time is a usage error.
func TestSearchCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice := cliAs{t, ctx, url, signUpAs(t, url, "alice")}
	alice.ok("room", "create", "lobby")
	alice.ok("room", "post", "lobby", "the rocket launches at noon")
	alice.ok("room", "post", "lobby", "lunch is at noon")
	poll.Until(t, 10*time.Second, "search finds the rocket", func() bool {
		out := alice.ok("search", "rocket", "in:lobby")
		return strings.HasPrefix(out, "lobby #") && strings.Contains(out, "alice: the rocket launches at noon\n") && strings.Count(out, "\n") == 1
	})
	if out := alice.ok("search", `"noon lunch"`); out != "no messages found\n" {
		t.Errorf("a phrase not in any message printed %q", out)
	}
	if r := alice.run("", "search", "rocket", "--after", "yesterday"); r.code != 2 {
		t.Errorf("--after yesterday = %+v, want a usage error", r)
	}
}

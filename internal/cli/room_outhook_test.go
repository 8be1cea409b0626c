package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/webhook"
)

func TestRoomOutgoingHookCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	var mu sync.Mutex
	var secret string
	var bodies []string
	fail := true
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if webhook.Verify(secret, r.Header.Get(webhook.HeaderTimestamp), r.Header.Get(webhook.HeaderSignature), b, time.Now(), time.Minute) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if fail { // the first attempt fails, so the log shows a retry
			fail = false
			http.Error(w, "later", http.StatusServiceUnavailable)
			return
		}
		bodies = append(bodies, string(b))
	}))
	defer recv.Close()
	url, _ := startServe(t, "--webhook-allow-cidr", "127.0.0.1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bob := cliAs{t, ctx, url, signUpAs(t, url, "bob")}
	alice := cliAs{t, ctx, url, signUpAs(t, url, "alice")}
	bob.ok("room", "create", "ops")
	alice.ok("room", "join", "ops")

	bob.fails("forbidden", "room", "outgoing-hook", "create", "ops", "evil", "http://10.0.0.1/")
	alice.fails("forbidden", "room", "outgoing-hook", "create", "ops", "mine", recv.URL)
	out := bob.ok("room", "outgoing-hook", "create", "ops", "ci", recv.URL+"/hook", "--trigger", "deploy,ship")
	m := regexp.MustCompile(`^created outgoing hook ([0-9a-f]{16}) in room ops to \S+\nsecret: (\S+)\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("create printed %q", out)
	}
	id := m[1]
	mu.Lock()
	secret = m[2]
	mu.Unlock()
	if list := bob.ok("room", "outgoing-hook", "list", "ops"); !strings.Contains(list, id+"  ci    deploy,ship") || strings.Contains(list, m[2]) {
		t.Fatalf("list printed %q", list)
	}
	alice.ok("room", "post", "ops", "hello")
	alice.ok("room", "post", "ops", "ship it")
	poll.Until(t, 20*time.Second, "the message delivered", func() error {
		if log := bob.ok("room", "outgoing-hook", "deliveries", "ops", id); !strings.Contains(log, "delivered") {
			return io.EOF
		}
		return nil
	})
	log := bob.ok("room", "outgoing-hook", "deliveries", "ops", id)
	if !regexp.MustCompile(`(?m)^\S+ \S+\s+4\s+2\s+delivered\s+200`).MatchString(log) || !regexp.MustCompile(`(?m)^\S+ \S+\s+4\s+1\s+retry\s+503`).MatchString(log) {
		t.Fatalf("deliveries printed %q", log)
	}
	mu.Lock()
	if len(bodies) != 1 || !strings.Contains(bodies[0], `"text":"ship it"`) {
		t.Fatalf("receiver got %q", bodies)
	}
	mu.Unlock()
	bob.ok("room", "outgoing-hook", "delete", "ops", id)
	bob.fails("not_found", "room", "outgoing-hook", "deliveries", "ops", id)
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
)

func TestQueueCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	alice := cliAs{t, ctx, url, signUpAs(t, url, "alice")}
	bob := cliAs{t, ctx, url, signUpAs(t, url, "bob")}

	if got := alice.ok("queue", "create", "jobs"); got != "created queue jobs\n" {
		t.Errorf("create printed %q", got)
	}
	alice.fails("conflict", "queue", "create", "jobs")
	if got := bob.ok("queue", "send", "jobs", "job 1"); !regexp.MustCompile(`^sent message \d+ to jobs\n$`).MatchString(got) {
		t.Errorf("send printed %q", got)
	}
	bob.ok("queue", "send", "jobs", "for alice", "--to", "alice")
	bob.fails("not_found", "queue", "send", "nowhere", "x")

	t.Run("list", func(t *testing.T) {
		if got := alice.ok("queue", "list"); !regexp.MustCompile(`(?m)^jobs\s+2\s+0\s+alice\s`).MatchString(got) {
			t.Errorf("list:\n%s", got)
		}
		var qs []client.Queue
		if err := json.Unmarshal([]byte(alice.ok("queue", "list", "--waiting", "--json")), &qs); err != nil || len(qs) != 1 || qs[0].Name != "jobs" {
			t.Errorf("list --waiting --json = %+v (%v)", qs, err)
		}
	})

	t.Run("peek, receive with a lease, ack", func(t *testing.T) {
		r := alice.run("", "queue", "peek", "jobs")
		if r.code != 0 || r.stdout != "job 1\n" || !strings.Contains(r.stderr, "from bob") {
			t.Errorf("peek = %+v", r)
		}
		r = alice.run("", "queue", "receive", "jobs", "--ack-timeout", "30s")
		m := regexp.MustCompile(`receipt (\S+) \(ack before`).FindStringSubmatch(r.stderr)
		if r.code != 0 || r.stdout != "job 1\n" || m == nil {
			t.Fatalf("receive --ack-timeout = %+v, want the body and a receipt", r)
		}
		if got := alice.ok("queue", "ack", "jobs", m[1]); got != "acked\n" {
			t.Errorf("ack printed %q", got)
		}
		alice.fails("conflict", "queue", "ack", "jobs", m[1])
	})

	t.Run("receive for me, then none", func(t *testing.T) {
		if r := bob.run("", "queue", "receive", "jobs"); r.code != 0 || r.stdout != "" || r.stderr != "no message\n" {
			t.Errorf("bob receives alice's message or something else: %+v", r)
		}
		var msg client.QueueMessage
		if err := json.Unmarshal([]byte(alice.ok("queue", "receive", "jobs", "--json")), &msg); err != nil || msg.Body != "for alice" || msg.To != "alice" {
			t.Errorf("receive --json = %+v (%v)", msg, err)
		}
		if got := alice.ok("queue", "receive", "jobs", "--json", "--wait", "100ms"); got != "null\n" {
			t.Errorf("receive --json from an empty queue = %q, want null", got)
		}
	})

	t.Run("receive --ack acknowledges the last one", func(t *testing.T) {
		bob.ok("queue", "send", "jobs", "job 2")
		bob.ok("queue", "send", "jobs", "job 3")
		receipt := regexp.MustCompile(`receipt (\S+) \(ack before`)
		r := alice.run("", "queue", "receive", "jobs", "--ack-timeout", "30s")
		m := receipt.FindStringSubmatch(r.stderr)
		if r.code != 0 || r.stdout != "job 2\n" || m == nil {
			t.Fatalf("receive --ack-timeout = %+v", r)
		}
		r = alice.run("", "queue", "receive", "jobs", "--ack-timeout", "30s", "--ack", m[1])
		next := receipt.FindStringSubmatch(r.stderr)
		if r.code != 0 || r.stdout != "job 3\n" || next == nil {
			t.Fatalf("receive --ack = %+v", r)
		}
		alice.fails("conflict", "queue", "ack", "jobs", m[1]) // acknowledged by the receive
		alice.fails("conflict", "queue", "receive", "jobs", "--ack", next[1]+","+m[1])
		alice.ok("queue", "ack", "jobs", next[1]) // untouched by the refused receive
	})

	t.Run("delete", func(t *testing.T) {
		bob.fails("forbidden", "queue", "delete", "jobs")
		if got := alice.ok("queue", "delete", "jobs"); got != "deleted queue jobs\n" {
			t.Errorf("delete printed %q", got)
		}
		alice.fails("not_found", "queue", "receive", "jobs")
	})
}

// Dead letters through a real node: the partition leader moves them in the
// background.
func TestQueueCommands_DeadLetters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	alice := cliAs{t, ctx, url, signUpAs(t, url, "alice")}
	bob := cliAs{t, ctx, url, signUpAs(t, url, "bob")}

	alice.ok("queue", "create", "dlq")
	alice.fails("invalid", "queue", "create", "jobs", "--dead-letter", "nowhere")
	alice.ok("queue", "create", "jobs", "--dead-letter", "dlq", "--max-deliveries", "2")
	alice.fails("invalid", "queue", "configure", "jobs", "--overflow", "sometimes")
	bob.fails("forbidden", "queue", "configure", "jobs", "--max-length", "5")
	if got := bob.run("one\ntwo\n", "queue", "send-batch", "jobs", "--priority", "3"); got.code != 0 || strings.Count(got.stdout, "sent message") != 2 {
		t.Fatalf("send-batch = %+v", got)
	}
	var msgs []client.QueueMessage
	if err := json.Unmarshal([]byte(bob.ok("queue", "receive", "jobs", "--max", "2", "--ack-timeout", "30s")), &msgs); err != nil || len(msgs) != 2 || msgs[0].Priority != 3 {
		t.Fatalf("receive --max = %+v (%v)", msgs, err)
	}
	if got := bob.ok("queue", "extend", "jobs", msgs[0].Receipt, "--ack-timeout", "1m"); !strings.HasPrefix(got, "lease extended until ") {
		t.Errorf("extend printed %q", got)
	}
	bob.ok("queue", "nack", "jobs", msgs[0].Receipt, "--dead", "--reason", "bad input")
	bob.ok("queue", "nack", "jobs", msgs[1].Receipt, "--delay", "1ms")
	bob.fails("conflict", "queue", "nack", "jobs", msgs[1].Receipt)
	poll.Until(t, 20*time.Second, "the dead letter reaches dlq", func() bool {
		var q client.Queue
		return json.Unmarshal([]byte(alice.ok("queue", "stats", "dlq", "--json")), &q) == nil && q.Stats.DeadLetters == 1
	})
	poll.Until(t, 10*time.Second, "the queues in /metrics", func() error {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if want := `parley_queue_messages{queue="dlq",state="dead_letter"} 1`; !strings.Contains(string(b), want) {
			return fmt.Errorf("no %s", want)
		}
		return nil
	})
	if got := alice.ok("queue", "browse", "dlq"); !strings.Contains(got, "rejected: bad input") || !strings.Contains(got, "jobs") {
		t.Errorf("browse:\n%s", got)
	}
	if got := alice.ok("queue", "redrive", "dlq"); got != "redrove 1 dead letters from dlq\n" {
		t.Errorf("redrive printed %q", got)
	}
	if got := alice.ok("queue", "purge", "jobs"); !strings.HasPrefix(got, "purged ") {
		t.Errorf("purge printed %q", got)
	}
	bob.fails("forbidden", "queue", "purge", "jobs")
}

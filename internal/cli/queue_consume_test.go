package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
)

// parley queue consume writes out the messages the server pushes, in
// order, acknowledging each: with --count it stops there, and the message
// it held beyond (prefetch) goes back to the queue at once. A body's
// control characters are escaped on a terminal as receive does; bad flags
// are usage errors; a missing queue fails naming it.
func TestQueueConsume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice := cliAs{t, ctx, url, signUpAs(t, url, "alice")}
	alice.ok("queue", "create", "jobs")
	for _, body := range []string{"job 1", "job 2", "job 3", "job 4"} {
		alice.ok("queue", "send", "jobs", body)
	}
	r := alice.run("", "queue", "consume", "jobs", "--count", "2", "--prefetch", "2", "--ack-timeout", "1m")
	if r.code != 0 || r.stdout != "job 1\njob 2\n" {
		t.Fatalf("consume --count 2: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "receipt") || !strings.Contains(r.stderr, "message 1 from alice") {
		t.Fatalf("stderr %q: want each message's line, no receipt to act on", r.stderr)
	}
	c := client.New(url, client.WithToken(alice.token))
	poll.Until(t, 10*time.Second, "the two acknowledged, the held one back", func() error {
		q, err := c.GetQueue(ctx, "jobs")
		if err != nil {
			return err
		}
		if q.Messages != 2 || q.InFlight != 0 {
			return fmt.Errorf("%d messages, %d in flight; want 2 and 0", q.Messages, q.InFlight)
		}
		return nil
	})
	var m client.QueueMessage
	if err := json.Unmarshal([]byte(alice.ok("queue", "consume", "jobs", "--count", "1", "--json")), &m); err != nil || m.Body != "job 3" || m.Receipt == "" {
		t.Fatalf("consume --json = %+v, %v; want job 3 with its receipt", m, err)
	}

	for _, args := range [][]string{{"--prefetch", "0"}, {"--prefetch", "101"}, {"--count", "-1"}, {"--ack-timeout", "-1s"}} {
		if r := alice.run("", append([]string{"queue", "consume", "jobs"}, args...)...); r.code != 2 {
			t.Errorf("consume %v: exit %d (%s), want 2 (usage)", args, r.code, r.stderr)
		}
	}
	if r := alice.run("", "queue", "consume", "nowhere", "--count", "1"); r.code != 1 || !strings.Contains(r.stderr, "not_found") {
		t.Errorf("consume nowhere: exit %d, stderr %q; want not_found", r.code, r.stderr)
	}
}

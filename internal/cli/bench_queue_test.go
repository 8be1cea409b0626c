package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/bench"
	"github.com/parley-chat/parley/internal/poll"
)

// benchQueueLeftovers runs `parley bench queue` for 50 messages with 3
// consumers and 2 producers on a new node, with extra flags, and returns
// its report, the messages the producers sent, and the bench queues' count,
// stored messages and messages in flight afterwards.
func benchQueueLeftovers(t *testing.T, extra ...string) (rep bench.Report, sent int, queues int, stored, inFlight uint64) {
	t.Helper()
	rep, sent, count := benchQueueRun(t, extra...)
	queues, stored, inFlight = count()
	return rep, sent, queues, stored, inFlight
}

// benchQueueRun is benchQueueLeftovers with the count of what is left
// (bench queues, stored messages, messages in flight) to call when wanted.
func benchQueueRun(t *testing.T, extra ...string) (rep bench.Report, sent int, count func() (queues int, stored, inFlight uint64)) {
	t.Helper()
	url, _ := startServe(t)
	token := signUp(t, url)
	args := append([]string{
		"--servers", url, "--clients", "3", "--producers", "2", "--requests", "50",
		"--token", token, "--json", filepath.Join(t.TempDir(), "queue.json"), "-q",
	}, extra...)
	o, err := ParseBenchQueue("parley bench queue", args, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep = runBenchFunc(t, o.JSON, func(ctx context.Context, out *bytes.Buffer) error { return BenchQueue(ctx, o, out, out) })
	if rep.Workload != "queue" || rep.Ops != 50 || rep.Errors != 0 {
		t.Fatalf("report: workload %s, ops %d, errors %d (%v); want queue, 50, 0", rep.Workload, rep.Ops, rep.Errors, rep.ErrorKinds)
	}
	if sent, err = strconv.Atoi(rep.Params["sent"]); err != nil || sent < 50 {
		t.Fatalf("sent %q, want at least 50", rep.Params["sent"])
	}
	return rep, sent, func() (queues int, stored, inFlight uint64) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		qs, err := client.New(url, client.WithToken(token)).ListQueues(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if strings.HasPrefix(q.Name, "bench-") {
				queues++
				stored += q.Messages
				inFlight += q.InFlight
			}
		}
		return queues, stored, inFlight
	}
}

func TestBenchQueue_MessagesThrough(t *testing.T) {
	_, sent, n, stored, inFlight := benchQueueLeftovers(t, "--queues", "2")
	// Every message taken was acknowledged: what is left is the backlog,
	// none of it leased. (A send cut short when the producers stopped may
	// have been stored without being counted: one per producer at most.)
	if n != 2 || stored < uint64(sent-50) || stored > uint64(sent-50+2) || inFlight != 0 {
		t.Errorf("%d bench queues storing %d messages, %d in flight; want 2, %d (+2 at most), 0", n, stored, inFlight, sent-50)
	}
}

// With --ack-on-receive every receive acknowledges the consumer's
// previous message: what is left is the backlog and one leased message per
// consumer, the last each took.
func TestBenchQueue_AckOnReceive(t *testing.T) {
	rep, sent, _, stored, inFlight := benchQueueLeftovers(t, "--queues", "1", "--ack-on-receive")
	if rep.Params["ack"] == "" {
		t.Errorf("params %v do not say the acks ride on receives", rep.Params)
	}
	if inFlight < 1 || inFlight > 3 || stored-inFlight < uint64(sent-50) || stored-inFlight > uint64(sent-50+2) {
		t.Errorf("bench queue stores %d messages, %d in flight; want 1-3 in flight and %d (+2 at most) besides", stored, inFlight, sent-50)
	}
}

// With --stream the consumers take their messages from live streams and
// acknowledge them with frames: every message through was acknowledged,
// and the one each consumer held when its stream closed goes back to the
// queue at once, so nothing stays leased.
func TestBenchQueue_Stream(t *testing.T) {
	rep, sent, count := benchQueueRun(t, "--queues", "1", "--stream")
	if rep.Params["consume"] == "" {
		t.Errorf("params %v do not say the consumers use streams", rep.Params)
	}
	poll.Until(t, 10*time.Second, "the consumers' held messages returned", func() error {
		n, stored, inFlight := count()
		if n != 1 || stored < uint64(sent-50) || stored > uint64(sent-50+2) || inFlight != 0 {
			return fmt.Errorf("%d bench queues storing %d messages, %d in flight; want 1, %d (+2 at most), 0", n, stored, inFlight, sent-50)
		}
		return nil
	})
}

func TestParseBenchQueue_Invalid(t *testing.T) {
	for _, args := range [][]string{{"--queues", "0"}, {"--queues", "4", "--clients", "2"}, {"--clients", "4", "--producers", "1", "--queues", "2"}, {"--size", "0"}} {
		if _, err := ParseBenchQueue("parley bench queue", args, nil); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// Delayed messages arrive, each once, none before its due time by more
// than the documented clock tolerance (one node here: none early at all),
// and the report says how late they were; the queue feature flags of
// `bench queue` create the dead-letter queues.
func TestBenchQueueDelay_EveryMessageOnTime(t *testing.T) {
	url, _ := startServe(t)
	token := signUp(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := mustRun(t, ctx, "bench", "queue-delay", "--servers", url, "--token", token, "--clients", "2",
		"--messages", "40", "--rate", "50", "--delay", "300ms", "-q")
	if !strings.Contains(out, "sent 40, received 40, early 0 (at most 0.0 ms), duplicates 0") || !strings.Contains(out, "99%") {
		t.Fatalf("report:\n%s", out)
	}

	o, err := ParseBenchQueue("parley bench queue", []string{
		"--servers", url, "--clients", "2", "--queues", "1", "--requests", "20", "--dead-letters-priorities",
		"--token", token, "--queue-prefix", "dlqbench-", "--json", filepath.Join(t.TempDir(), "queue.json"), "-q",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := runBenchFunc(t, o.JSON, func(ctx context.Context, out *bytes.Buffer) error { return BenchQueue(ctx, o, out, out) })
	if rep.Ops != 20 || rep.Errors != 0 || rep.Params["features"] == "" {
		t.Fatalf("report: ops %d, errors %d, params %v", rep.Ops, rep.Errors, rep.Params)
	}
	qs, err := client.New(url, client.WithToken(token)).ListQueues(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	dlqs := 0
	for _, q := range qs {
		if strings.HasPrefix(q.Name, "dlqbench-") && strings.HasSuffix(q.Name, "-dlq") {
			dlqs++
		}
	}
	if dlqs != 1 {
		t.Errorf("%d dead-letter queues, want 1: %+v", dlqs, qs)
	}
}

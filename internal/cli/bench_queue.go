package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/bench"
)

// BenchQueueOptions configure `parley bench queue`.
type BenchQueueOptions struct {
	BenchOptions
	// Queues is the number of queues.
	Queues int
	// Producers is the number of producers (0: as many as --clients).
	Producers int
	// Size is the length of each message body in characters.
	Size int
	// AckTimeout is the lease of each received message.
	AckTimeout time.Duration
	// Wait is how long a receive waits for a message.
	Wait time.Duration
	// QueuePrefix starts every queue name the benchmark creates.
	QueuePrefix string
	// DeadLettersPriorities gives every queue a dead-letter queue and a
	// delivery limit, and sends with priorities 0 to 9.
	DeadLettersPriorities bool
	// AckOnReceive acknowledges each message with the consumer's next
	// receive.
	AckOnReceive bool
	// Stream sends and consumes over live streams, the server pushing
	// messages to consumers.
	Stream bool
}

// runBenchQueue is the action of `parley bench queue`.
func runBenchQueue(ctx context.Context, e *Env, path string, args []string) error {
	o, err := ParseBenchQueue(path, args, e.getenv)
	if err != nil {
		return err
	}
	if err := o.signIn(e); err != nil {
		return err
	}
	return BenchQueue(ctx, o, e.Stdout, e.Stderr)
}

// ParseBenchQueue reads the flags of `parley bench queue`.
func ParseBenchQueue(path string, args []string, getenv func(string) string) (BenchQueueOptions, error) {
	var o BenchQueueOptions
	fs := newFlagSet(path, "[flags]", `
Move messages through durable queues and report throughput, latency
percentiles (50/66/75/80/90/95/98/99/100, as Apache Bench) and a per-second
timeline. --clients consumers each take a message under a lease
(ack_timeout_ms) and acknowledge it: one operation is one message through,
and its latency is the receive plus the ack. --producers producers send
(each send with its own idempotency key), paced by the consumers so that
each queue holds about two messages per consumer.`)
	addBenchFlags(fs, &o.BenchOptions, orNoEnv(getenv))
	addRouteFlag(fs, &o.BenchOptions)
	fs.IntVar(&o.Queues, "queues", 1, "number of `queues`")
	fs.IntVar(&o.Producers, "producers", 0, "number of `producers` (0: as many as --clients)")
	fs.IntVar(&o.Size, "size", 200, "message length in `characters` (the seeds measured 200 and 2000)")
	fs.DurationVar(&o.AckTimeout, "ack-timeout", 30*time.Second, "lease of a received message before it is delivered again")
	fs.DurationVar(&o.Wait, "wait", 5*time.Second, "how long a receive waits for a message (none in time is an error)")
	fs.StringVar(&o.QueuePrefix, "queue-prefix", "bench-", "`prefix` of the queue names (a run id follows)")
	fs.BoolVar(&o.DeadLettersPriorities, "dead-letters-priorities", false, "give every queue a dead-letter queue and a delivery limit of 5, and send with priorities 0 to 9 in turn (the features' cost, against a run without)")
	fs.BoolVar(&o.AckOnReceive, "ack-on-receive", false, "acknowledge each message with the consumer's next receive instead of a call of its own (one call and one Raft entry per message fewer)")
	fs.BoolVar(&o.Stream, "stream", false, "send and consume over live streams, one per producer and consumer: producers wait for each send's sent frame, the server pushes each message to a consumer (prefetch 1), which acknowledges it with a frame; no call per message")
	if err := parseBench(fs, path, args, getenv, &o.BenchOptions); err != nil {
		return o, err
	}
	if o.Producers == 0 {
		o.Producers = o.Clients
	}
	switch {
	case o.Queues < 1:
		return o, usagef(path, "--queues %d: want at least 1", o.Queues)
	case o.Clients < o.Queues || o.Producers < o.Queues:
		return o, usagef(path, "--clients %d and --producers %d: want at least one of each per queue (--queues %d)", o.Clients, o.Producers, o.Queues)
	case o.Size < 1:
		return o, usagef(path, "--size %d: want at least 1", o.Size)
	case o.AckTimeout < time.Millisecond || o.Wait < time.Millisecond:
		return o, usagef(path, "--ack-timeout and --wait: want at least 1ms")
	case o.Stream && o.AckOnReceive:
		return o, usagef(path, "--stream and --ack-on-receive: stream consumers acknowledge with frames; pick one")
	}
	return o, nil
}

// BenchQueue runs the queue workload and prints the report to stdout
// (progress to stderr), writing the files asked for.
func BenchQueue(ctx context.Context, o BenchQueueOptions, stdout, stderr io.Writer) error {
	hc, done := benchHTTPClient(o.Clients+o.Producers, len(o.Servers))
	defer done()
	clients, err := readyClients(ctx, hc, o.Servers, o.Token)
	if err != nil {
		return err
	}
	params := map[string]string{
		"servers":   strings.Join(o.Servers, ","),
		"queues":    strconv.Itoa(o.Queues),
		"producers": strconv.Itoa(o.Producers),
		"size":      strconv.Itoa(o.Size) + " characters",
	}
	pool, err := o.pool(ctx, clients, params)
	if err != nil {
		return err
	}
	w, err := bench.NewQueue(bench.QueueOptions{
		Clients: clients, Queues: o.Queues, Producers: o.Producers, Size: o.Size,
		AckTimeout: o.AckTimeout, Wait: o.Wait, QueuePrefix: o.QueuePrefix, DeadLettersPriorities: o.DeadLettersPriorities,
		AckOnReceive: o.AckOnReceive, Stream: o.Stream, Pool: pool,
	})
	if err != nil {
		return err
	}
	defer w.Close()
	if o.DeadLettersPriorities {
		params["features"] = "dead-letter queues, delivery limit 5, priorities 0-9"
	}
	if o.AckOnReceive {
		params["ack"] = "with the next receive"
	}
	if o.Stream {
		params["consume"] = "live streams, prefetch 1, ack frames"
	}
	return runBenchThen(ctx, w, o.BenchOptions, params, stdout, stderr, func(rep *bench.Report) {
		_ = w.Close()
		sent, failed, last := w.Sent()
		rep.Params["sent"] = strconv.FormatInt(sent, 10)
		if failed > 0 {
			rep.Params["failed_sends"] = fmt.Sprintf("%d (latest: %s)", failed, last)
		}
	})
}

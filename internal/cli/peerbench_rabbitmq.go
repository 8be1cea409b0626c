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

// defaultAMQPURL is a local RabbitMQ's default listener and user.
const defaultAMQPURL = "amqp://guest:guest@127.0.0.1:5672/"

// BenchRabbitMQOptions configure `parley-bench rabbitmq-queue`. Servers
// holds the AMQP URLs.
type BenchRabbitMQOptions struct {
	BenchOptions
	// Queues is the number of quorum queues.
	Queues int
	// Producers is the number of producers (0: as many as --clients).
	Producers int
	// Size is the length of each message body in bytes.
	Size int
	// Prefetch is each consumer's QoS prefetch count.
	Prefetch int
	// Wait is how long a consumer waits for a delivery.
	Wait time.Duration
	// QueuePrefix starts every queue name the benchmark declares.
	QueuePrefix string
}

// runBenchRabbitMQ is the action of `parley-bench rabbitmq-queue`; open
// opens the workload.
func runBenchRabbitMQ(ctx context.Context, e *Env, path string, args []string, open func(bench.RabbitMQQueueOptions) (RabbitMQQueueWorkload, error)) error {
	o, err := ParseBenchRabbitMQ(path, args, e.getenv)
	if err != nil {
		return err
	}
	return BenchRabbitMQ(ctx, o, open, e.Stdout, e.Stderr)
}

// ParseBenchRabbitMQ reads the flags of `parley-bench rabbitmq-queue`:
// those of `parley bench queue`, with --urls (AMQP URLs, stored in Servers)
// in place of --servers and --token, and --prefetch in place of
// --ack-timeout.
func ParseBenchRabbitMQ(path string, args []string, getenv func(string) string) (BenchRabbitMQOptions, error) {
	var o BenchRabbitMQOptions
	fs := newFlagSet(path, "[flags]", `
Run the workload of 'parley bench queue' against RabbitMQ quorum queues
(x-queue-type=quorum, replicated on every node of the cluster) over AMQP
0-9-1: --clients consumers with manual acks (prefetch --prefetch) each take
a delivery and ack it - one operation is one message through - while
--producers producers publish persistent messages with publisher confirms,
each waiting for its confirm as a Parley send waits for its commit, paced by
the consumers so that each queue holds about two messages per consumer. The
queues are deleted at the end. To compare the two systems on the same
machine in the same run.`)
	addBenchFlags(fs, &o.BenchOptions, orNoEnv(getenv))
	fs.hide("servers")
	fs.hide("token")
	fs.Var(newListValue(&o.Servers, []string{defaultAMQPURL}), "urls", "AMQP `URLs` of the RabbitMQ nodes, comma separated; clients are spread over them round-robin")
	fs.IntVar(&o.Queues, "queues", 1, "number of `queues`")
	fs.IntVar(&o.Producers, "producers", 0, "number of `producers` (0: as many as --clients)")
	fs.IntVar(&o.Size, "size", 200, "message length in `bytes` (as 'parley bench queue' --size)")
	fs.IntVar(&o.Prefetch, "prefetch", 1, "unacked `messages` the broker may push to a consumer ahead")
	fs.DurationVar(&o.Wait, "wait", 5*time.Second, "how long a consumer waits for a delivery (none in time is an error)")
	fs.StringVar(&o.QueuePrefix, "queue-prefix", "bench-", "`prefix` of the queue names (a run id follows)")
	pos, err := fs.parse(args, orNoEnv(getenv))
	if err != nil {
		return o, err
	}
	if len(pos) > 0 {
		return o, usagef(path, "unexpected argument %q", pos[0])
	}
	if o.Requests > 0 && !given(fs, "duration") {
		o.Duration = 0 // --requests alone: run until the count is done
	}
	if o.Producers == 0 {
		o.Producers = o.Clients
	}
	if err := checkPeerURLs(o.Servers, "amqp://", "amqps://"); err != nil {
		return o, usagef(path, "--urls: %s", err)
	}
	if err := o.checkRun(); err != nil {
		return o, &usageError{path: path, err: err}
	}
	switch {
	case o.Queues < 1:
		return o, usagef(path, "--queues %d: want at least 1", o.Queues)
	case o.Clients < o.Queues || o.Producers < o.Queues:
		return o, usagef(path, "--clients %d and --producers %d: want at least one of each per queue (--queues %d)", o.Clients, o.Producers, o.Queues)
	case o.Size < 1:
		return o, usagef(path, "--size %d: want at least 1", o.Size)
	case o.Prefetch < 1:
		return o, usagef(path, "--prefetch %d: want at least 1", o.Prefetch)
	case o.Wait < time.Millisecond:
		return o, usagef(path, "--wait: want at least 1ms")
	}
	return o, nil
}

// BenchRabbitMQ runs the queue workload, opened by open, against RabbitMQ
// and prints the report to stdout (progress to stderr), writing the files
// asked for.
func BenchRabbitMQ(ctx context.Context, o BenchRabbitMQOptions, open func(bench.RabbitMQQueueOptions) (RabbitMQQueueWorkload, error), stdout, stderr io.Writer) error {
	w, err := open(bench.RabbitMQQueueOptions{
		URLs: o.Servers, Queues: o.Queues, Producers: o.Producers, Size: o.Size,
		Prefetch: o.Prefetch, Wait: o.Wait, QueuePrefix: o.QueuePrefix,
	})
	if err != nil {
		return err
	}
	defer w.Close()
	params := map[string]string{
		"queues":     strconv.Itoa(o.Queues),
		"queue_type": "quorum",
		"producers":  strconv.Itoa(o.Producers),
		"prefetch":   strconv.Itoa(o.Prefetch),
		"size":       strconv.Itoa(o.Size) + " bytes",
	}
	shown := o.BenchOptions
	shown.Servers = redactedURLs(o.Servers)
	params["urls"] = strings.Join(shown.Servers, ",")
	return runBenchThen(ctx, w, shown, params, stdout, stderr, func(rep *bench.Report) {
		closeErr := w.Close()
		sent, failed, last := w.Sent()
		rep.Params["sent"] = strconv.FormatInt(sent, 10)
		if failed > 0 {
			rep.Params["failed_sends"] = fmt.Sprintf("%d (latest: %s)", failed, last)
		}
		if closeErr != nil {
			rep.Params["cleanup"] = closeErr.Error()
		}
	})
}

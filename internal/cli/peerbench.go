package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/parley-chat/parley/internal/bench"
)

// The peer benchmarks run Parley's workloads against the systems it is
// compared with - etcd, NATS JetStream, RabbitMQ - so that its performance
// targets can be checked as ratios measured in the same run
// (scripts/bench/compare-*.sh). They are the commands of parley-bench, not
// of parley: their flags live here with every other flag, but the clients
// of those systems come in through Peers, which only cmd/parley-bench fills
// (from internal/bench/peers). parley never refers to Peers, so the server
// binary links none of them.

// Peers opens the peer workloads. Each function checks its options and
// returns the workload, ready for bench.Run.
type Peers struct {
	EtcdKV        func(bench.EtcdKVOptions) (EtcdKVWorkload, error)
	NATSPublish   func(bench.NATSPublishOptions) (NATSPublishWorkload, error)
	RabbitMQQueue func(bench.RabbitMQQueueOptions) (RabbitMQQueueWorkload, error)
}

// EtcdKVWorkload is the kv workload against etcd's JSON gateway.
type EtcdKVWorkload interface {
	bench.Workload
	// Health returns nil when the member at endpoint has a leader.
	Health(ctx context.Context, endpoint string) error
}

// NATSPublishWorkload publishes to a JetStream stream it creates.
type NATSPublishWorkload interface {
	bench.Workload
	// Stream names the stream.
	Stream() string
	// Close deletes the stream and closes the connections; only the first
	// call does anything.
	Close() error
}

// RabbitMQQueueWorkload is the queue workload against RabbitMQ quorum
// queues it declares.
type RabbitMQQueueWorkload interface {
	bench.Workload
	// Sent returns how many messages the producers had confirmed and how
	// many publishes failed, with the latest failure.
	Sent() (sent, failed int64, last string)
	// Close stops the producers and deletes the queues; only the first
	// call does anything.
	Close() error
}

// peerCommand returns the command tree of `parley-bench`, whose actions
// open their workloads through p.
func peerCommand(p Peers) *command {
	return &command{
		name:    "parley-bench",
		summary: "Parley's benchmark workloads against etcd, NATS JetStream and RabbitMQ, to compare with 'parley bench'.",
		subs: []*command{
			{name: "etcd-kv", summary: "the kv workload against etcd 3.4", action: func(ctx context.Context, e *Env, path string, args []string) error {
				return runBenchEtcdKV(ctx, e, path, args, p.EtcdKV)
			}},
			{name: "nats-publish", summary: "JetStream publishes with acks, for comparison with kv puts", action: func(ctx context.Context, e *Env, path string, args []string) error {
				return runBenchNATS(ctx, e, path, args, p.NATSPublish)
			}},
			{name: "rabbitmq-queue", summary: "the queue workload against RabbitMQ quorum queues", action: func(ctx context.Context, e *Env, path string, args []string) error {
				return runBenchRabbitMQ(ctx, e, path, args, p.RabbitMQQueue)
			}},
		},
	}
}

// PeerBenchMain runs the parley-bench command line with args (without the
// program name) and returns the process exit code; signals are handled as
// in Main.
func PeerBenchMain(ctx context.Context, p Peers, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return withSignals(ctx, func(ctx context.Context) int {
		return RunPeerBench(ctx, &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv}, p, args)
	})
}

// RunPeerBench dispatches args to a parley-bench command and returns the
// exit code, as Run does for parley.
func RunPeerBench(ctx context.Context, e *Env, p Peers, args []string) int {
	return e.exit(peerCommand(p).run(ctx, e, "parley-bench", args))
}

// checkPeerURLs checks that there is at least one URL and that each starts
// with one of the schemes.
func checkPeerURLs(urls []string, schemes ...string) error {
	if len(urls) == 0 {
		return fmt.Errorf("give at least one URL")
	}
	for _, u := range urls {
		ok := false
		for _, s := range schemes {
			ok = ok || (strings.HasPrefix(u, s) && len(u) > len(s))
		}
		if !ok {
			return fmt.Errorf("%q is not a URL like %shost:port", u, schemes[0])
		}
	}
	return nil
}

// checkRun validates the shared measuring flags but --servers, which the
// peer benchmarks fill with their own kind of URL.
func (o *BenchOptions) checkRun() error {
	switch {
	case o.Clients < 1:
		return fmt.Errorf("--clients %d: want at least 1", o.Clients)
	case o.Requests < 0:
		return fmt.Errorf("--requests %d: must not be negative", o.Requests)
	case o.Duration < 0 || o.Warmup < 0 || o.Timeout < 0:
		return fmt.Errorf("--duration, --warmup and --timeout must not be negative")
	case o.Requests == 0 && o.Duration == 0:
		return fmt.Errorf("--duration 0 needs --requests")
	}
	return nil
}

// redactedURLs returns urls with any password replaced by xxx.
func redactedURLs(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = bench.RedactURL(u)
	}
	return out
}

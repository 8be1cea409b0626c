package cli

import (
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/parley-chat/parley/internal/bench"
)

// defaultNATSURL is a local NATS server's default client listener.
const defaultNATSURL = "nats://127.0.0.1:4222"

// BenchNATSOptions configure `parley-bench nats-publish`. Servers holds
// the NATS URLs.
type BenchNATSOptions struct {
	BenchOptions
	// Replicas is the stream's replication factor.
	Replicas int
	// ValueSize is the size of each message in bytes.
	ValueSize int
	// Keys is the number of subjects published to.
	Keys int
	// StreamPrefix starts the stream's name.
	StreamPrefix string
}

// runBenchNATS is the action of `parley-bench nats-publish`; open opens
// the workload.
func runBenchNATS(ctx context.Context, e *Env, path string, args []string, open func(bench.NATSPublishOptions) (NATSPublishWorkload, error)) error {
	o, err := ParseBenchNATS(path, args, e.getenv)
	if err != nil {
		return err
	}
	return BenchNATS(ctx, o, open, e.Stdout, e.Stderr)
}

// ParseBenchNATS reads the flags of `parley-bench nats-publish`.
func ParseBenchNATS(path string, args []string, getenv func(string) string) (BenchNATSOptions, error) {
	var o BenchNATSOptions
	fs := newFlagSet(path, "[flags]", `
Publish to a NATS JetStream stream and wait for each ack, which the stream
leader sends once a quorum of its replicas stored the message: the peer of
'parley bench kv --mix put' (a replicated, durable write acknowledged to the
client), with the same value size, keyspace (one subject per key) and
measurement. The stream (file storage, --replicas replicas) is created for
the run and deleted at the end; each client has its own connection. To
compare the two systems on the same machine in the same run.`)
	addBenchFlags(fs, &o.BenchOptions, orNoEnv(getenv))
	fs.hide("servers")
	fs.hide("token")
	fs.Var(newListValue(&o.Servers, []string{defaultNATSURL}), "urls", "client `URLs` of the NATS servers, comma separated; clients are spread over them round-robin")
	fs.IntVar(&o.Replicas, "replicas", 3, "`replicas` of the stream (1 to 5)")
	fs.IntVar(&o.ValueSize, "value-size", 256, "message size in `bytes` (as 'parley bench kv' --value-size)")
	fs.IntVar(&o.Keys, "keys", 10000, "number of `subjects` (as 'parley bench kv' --keys)")
	fs.StringVar(&o.StreamPrefix, "stream-prefix", "parley-bench-", "`prefix` of the stream name (a run id follows)")
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
	if err := checkPeerURLs(o.Servers, "nats://", "tls://"); err != nil {
		return o, usagef(path, "--urls: %s", err)
	}
	if err := o.checkRun(); err != nil {
		return o, &usageError{path: path, err: err}
	}
	switch {
	case o.Replicas < 1 || o.Replicas > 5:
		return o, usagef(path, "--replicas %d: want 1 to 5", o.Replicas)
	case o.ValueSize < 0:
		return o, usagef(path, "--value-size %d: must not be negative", o.ValueSize)
	case o.Keys < 1:
		return o, usagef(path, "--keys %d: want at least 1", o.Keys)
	case strings.ContainsAny(o.StreamPrefix, ".*> \t"):
		return o, usagef(path, "--stream-prefix %q: no dots, wildcards or spaces", o.StreamPrefix)
	}
	return o, nil
}

// BenchNATS runs the publish workload, opened by open, against NATS
// JetStream and prints the report to stdout (progress to stderr), writing
// the files asked for.
func BenchNATS(ctx context.Context, o BenchNATSOptions, open func(bench.NATSPublishOptions) (NATSPublishWorkload, error), stdout, stderr io.Writer) error {
	w, err := open(bench.NATSPublishOptions{
		URLs: o.Servers, StreamPrefix: o.StreamPrefix, Replicas: o.Replicas, ValueSize: o.ValueSize, Keys: o.Keys,
	})
	if err != nil {
		return err
	}
	defer w.Close()
	params := map[string]string{
		"urls":       strings.Join(redactedURLs(o.Servers), ","),
		"stream":     w.Stream(),
		"storage":    "file",
		"replicas":   strconv.Itoa(o.Replicas),
		"value_size": strconv.Itoa(o.ValueSize),
		"keys":       strconv.Itoa(o.Keys),
	}
	shown := o.BenchOptions
	shown.Servers = redactedURLs(o.Servers)
	return runBenchThen(ctx, w, shown, params, stdout, stderr, func(rep *bench.Report) {
		if err := w.Close(); err != nil {
			rep.Params["cleanup"] = err.Error()
		}
	})
}

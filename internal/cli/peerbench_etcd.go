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

// defaultEtcdEndpoint is etcd's default client URL.
const defaultEtcdEndpoint = "http://127.0.0.1:2379"

// runBenchEtcdKV is the action of `parley-bench etcd-kv`; open opens the
// workload.
func runBenchEtcdKV(ctx context.Context, e *Env, path string, args []string, open func(bench.EtcdKVOptions) (EtcdKVWorkload, error)) error {
	o, err := ParseBenchEtcdKV(path, args, e.getenv)
	if err != nil {
		return err
	}
	return BenchEtcdKV(ctx, o, open, e.Stdout, e.Stderr)
}

// ParseBenchEtcdKV reads the flags of `parley-bench etcd-kv`: those of
// `parley bench kv`, with --endpoints (etcd client URLs, stored in
// Servers) in place of --servers.
func ParseBenchEtcdKV(path string, args []string, getenv func(string) string) (BenchKVOptions, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var o BenchKVOptions
	fs := newFlagSet(path, "[flags]", `
Load an etcd 3.4 cluster with the kv workload of 'parley bench kv' - the same
keys, values, mix and measurement - sent to etcd's JSON gRPC gateway
(POST /v3/kv/put and /v3/kv/range over HTTP/1.1, through the same HTTP client
settings), to compare the two systems on the same machine in the same run.`)
	addBenchFlags(fs, &o.BenchOptions, getenv)
	fs.hide("servers") // etcd members are --endpoints
	fs.Var(newListValue(&o.Servers, []string{defaultEtcdEndpoint}), "endpoints", "client `URLs` of the etcd members, comma separated; clients are spread over them round-robin")
	addKVWorkloadFlags(fs, &o)
	pos, err := fs.parse(args, getenv)
	if err != nil {
		return o, err
	}
	if len(pos) > 0 {
		return o, usagef(path, "unexpected argument %q", pos[0])
	}
	if o.Requests > 0 && !given(fs, "duration") {
		o.Duration = 0 // --requests alone: run until the count is done
	}
	if len(o.Servers) == 0 {
		return o, usagef(path, "--endpoints: give at least one URL")
	}
	for _, s := range o.Servers {
		if err := checkServerURL(s); err != nil {
			return o, usagef(path, "--endpoints: %s", strings.Replace(err.Error(), ":7070", ":2379", 1))
		}
	}
	if err := o.check(); err != nil {
		return o, &usageError{path: path, err: err}
	}
	if err := checkKVWorkload(&o); err != nil {
		return o, &usageError{path: path, err: err}
	}
	return o, nil
}

// BenchEtcdKV runs the kv workload, opened by open, against the etcd
// members whose client URLs are o.Servers and prints the report to stdout
// (progress to stderr), writing the files asked for.
func BenchEtcdKV(ctx context.Context, o BenchKVOptions, open func(bench.EtcdKVOptions) (EtcdKVWorkload, error), stdout, stderr io.Writer) error {
	hc, done := benchHTTPClient(o.Clients, len(o.Servers))
	defer done()
	w, err := open(bench.EtcdKVOptions{
		Endpoints: o.Servers, HTTP: hc,
		Mix: o.Mix, ValueSize: o.ValueSize, Keys: o.Keys, KeyPrefix: o.KeyPrefix,
	})
	if err != nil {
		return err
	}
	for _, ep := range o.Servers {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := w.Health(cctx, ep)
		cancel()
		if err != nil {
			return fmt.Errorf("etcd member %s is not healthy: %s", ep, describe(err))
		}
	}
	params := map[string]string{
		"endpoints":  strings.Join(o.Servers, ","),
		"value_size": strconv.Itoa(o.ValueSize),
		"keys":       strconv.Itoa(o.Keys),
	}
	return runBench(ctx, w, o.BenchOptions, params, stdout, stderr)
}

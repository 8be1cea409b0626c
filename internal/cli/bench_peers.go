package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/bench"
)

// Baselines and peers: `parley bench etcd-kv` runs the kv workload against
// etcd, and `parley bench fsync` measures the disk, so that Parley's
// performance targets can be checked as ratios measured in the same run
// (scripts/bench/compare-etcd.sh runs all three).

// defaultEtcdEndpoint is etcd's default client URL.
const defaultEtcdEndpoint = "http://127.0.0.1:2379"

// runBenchEtcdKV is the action of `parley bench etcd-kv`.
func runBenchEtcdKV(ctx context.Context, e *Env, path string, args []string) error {
	o, err := ParseBenchEtcdKV(path, args, e.getenv)
	if err != nil {
		return err
	}
	return BenchEtcdKV(ctx, o, e.Stdout, e.Stderr)
}

// ParseBenchEtcdKV reads the flags of `parley bench etcd-kv`: those of
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

// addKVWorkloadFlags defines the flags that shape the kv workload, with
// the defaults of `parley bench kv`.
func addKVWorkloadFlags(fs *flagSet, o *BenchKVOptions) {
	fs.Var(newChoiceValue(&o.Mix, bench.MixPut, bench.MixPut, bench.MixGet, bench.MixMixed), "mix", "operations: `put`, get or mixed (half each)")
	fs.IntVar(&o.ValueSize, "value-size", 256, "value size in `bytes` (the seeds measured 200 and 2000)")
	fs.IntVar(&o.Keys, "keys", 10000, "size of the `keyspace`")
	fs.StringVar(&o.KeyPrefix, "key-prefix", "bench/", "`prefix` of every key written")
}

// checkKVWorkload validates the kv workload flags.
func checkKVWorkload(o *BenchKVOptions) error {
	switch {
	case o.ValueSize < 0:
		return fmt.Errorf("--value-size %d: must not be negative", o.ValueSize)
	case o.Keys < 1:
		return fmt.Errorf("--keys %d: want at least 1", o.Keys)
	}
	return nil
}

// BenchEtcdKV runs the kv workload against the etcd members whose client
// URLs are o.Servers and prints the report to stdout (progress to stderr),
// writing the files asked for.
func BenchEtcdKV(ctx context.Context, o BenchKVOptions, stdout, stderr io.Writer) error {
	hc, done := benchHTTPClient(o.Clients, len(o.Servers))
	defer done()
	w, err := bench.NewEtcdKV(bench.EtcdKVOptions{
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

// BenchFsyncOptions configure `parley bench fsync`.
type BenchFsyncOptions struct {
	// Dir holds the temporary files; put it where the nodes keep data.
	Dir string
	// Count is the number of syncs of each file.
	Count int
	// Size is the number of bytes written before each sync.
	Size int
	// Parallel is the number of files syncing concurrently, one writer
	// each.
	Parallel int
	// CSV, JSON and SVG name report files to write ("" for none).
	CSV, JSON, SVG string
	// Quiet drops the per-second progress lines on stderr.
	Quiet bool
}

// runBenchFsync is the action of `parley bench fsync`.
func runBenchFsync(ctx context.Context, e *Env, path string, args []string) error {
	o, err := ParseBenchFsync(path, args, e.getenv)
	if err != nil {
		return err
	}
	return BenchFsync(ctx, o, e.Stdout, e.Stderr)
}

// ParseBenchFsync reads the flags of `parley bench fsync`.
func ParseBenchFsync(path string, args []string, getenv func(string) string) (BenchFsyncOptions, error) {
	var o BenchFsyncOptions
	fs := newFlagSet(path, "[flags]", `
Measure this disk's fsync latency: append --size bytes to a temporary file
under --dir and fsync it, --count times, and report throughput, latency
percentiles and a per-second timeline like the other benchmarks. With
--parallel K, K files sync concurrently, one writer each, as the write-ahead
logs of K nodes sharing one disk do. Parley's latency targets are ratios to
this time, measured in the same run on the same disk.`)
	fs.StringVar(&o.Dir, "dir", ".", "`directory` for the temporary files: the disk the nodes' data lives on")
	fs.IntVar(&o.Count, "count", 1000, "syncs of each `file`")
	fs.IntVar(&o.Size, "size", 256, "`bytes` written before each sync")
	fs.IntVar(&o.Parallel, "parallel", 1, "`files` syncing concurrently")
	fs.StringVar(&o.CSV, "csv", "", "write the per-second timeline and totals as CSV to `file`")
	fs.StringVar(&o.JSON, "json", "", "write the full report as JSON to `file`")
	fs.StringVar(&o.SVG, "svg", "", "write a latency and throughput over time plot as SVG to `file`")
	fs.BoolVar(&o.Quiet, "q", false, "no per-second progress on stderr")
	pos, err := fs.parse(args, getenv)
	if err != nil {
		return o, err
	}
	if len(pos) > 0 {
		return o, usagef(path, "unexpected argument %q", pos[0])
	}
	switch {
	case o.Dir == "":
		return o, usagef(path, "--dir: must not be empty")
	case o.Count < 1:
		return o, usagef(path, "--count %d: want at least 1", o.Count)
	case o.Size < 1:
		return o, usagef(path, "--size %d: want at least 1", o.Size)
	case o.Parallel < 1:
		return o, usagef(path, "--parallel %d: want at least 1", o.Parallel)
	}
	return o, nil
}

// BenchFsync measures fsync on o.Dir and prints the report to stdout
// (progress to stderr), writing the files asked for. The temporary files
// are removed afterwards.
func BenchFsync(ctx context.Context, o BenchFsyncOptions, stdout, stderr io.Writer) (err error) {
	w, err := bench.NewFsync(bench.FsyncOptions{Dir: o.Dir, Size: o.Size, Files: o.Parallel})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Close()) }()
	bo := BenchOptions{
		Servers: []string{o.Dir}, Clients: o.Parallel, Requests: o.Count * o.Parallel,
		CSV: o.CSV, JSON: o.JSON, SVG: o.SVG, Quiet: o.Quiet,
	}
	params := map[string]string{
		"dir":            o.Dir,
		"write_size":     strconv.Itoa(o.Size) + " bytes",
		"files":          strconv.Itoa(o.Parallel),
		"syncs_per_file": strconv.Itoa(o.Count),
	}
	return runBench(ctx, w, bo, params, stdout, stderr)
}

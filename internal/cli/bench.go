package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/bench"
)

// BenchOptions are the measuring flags every `parley bench` workload
// shares.
type BenchOptions struct {
	// Servers are the base URLs of the target nodes; workers are spread
	// over them round-robin.
	Servers []string
	// Clients is the number of concurrent workers.
	Clients int
	// Duration and Requests end the run: whichever comes first, 0 meaning
	// no limit (at least one is set).
	Duration time.Duration
	Requests int
	// Warmup runs unmeasured before the measurement.
	Warmup time.Duration
	// Timeout bounds each operation.
	Timeout time.Duration
	// CSV, JSON and SVG name report files to write ("" for none).
	CSV, JSON, SVG string
	// Quiet drops the per-second progress lines on stderr.
	Quiet bool
	// Token is the bearer token the clients sign in with.
	Token string
	// Route sends each request to the server leading its partition when
	// that server is one of Servers (client.Pool); the kv, queue and
	// chat-post workloads route.
	Route bool
}

// BenchKVOptions configure `parley bench kv`.
type BenchKVOptions struct {
	BenchOptions
	// Mix is put, get or mixed.
	Mix string
	// ValueSize is the size of each value in bytes.
	ValueSize int
	// Keys is the size of the keyspace.
	Keys int
	// KeyPrefix starts every key the benchmark writes.
	KeyPrefix string
}

// addBenchFlags defines the shared measuring flags into o.
func addBenchFlags(fs *flagSet, o *BenchOptions, getenv func(string) string) {
	def := defaultServer
	if s := getenv("PARLEY_SERVER"); s != "" {
		def = s
	}
	fs.Var(newListValue(&o.Servers, []string{def}), "servers", "base `URLs` of the target nodes, comma separated; clients are spread over them round-robin (kv, queue and chat-post: see --route) (default $PARLEY_SERVER or "+defaultServer+")")
	fs.IntVar(&o.Clients, "clients", 16, "concurrent `clients`")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "how long to measure (ignored when only --requests is given)")
	fs.IntVar(&o.Requests, "requests", 0, "stop after this many `operations` (0: run for --duration)")
	fs.DurationVar(&o.Warmup, "warmup", 0, "run unmeasured this long first")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Second, "give up on one operation after this long (it counts as an error)")
	fs.StringVar(&o.CSV, "csv", "", "write the per-second timeline and totals as CSV to `file`")
	fs.StringVar(&o.JSON, "json", "", "write the full report as JSON to `file`")
	fs.StringVar(&o.SVG, "svg", "", "write a latency and throughput over time plot as SVG to `file`")
	fs.BoolVar(&o.Quiet, "q", false, "no per-second progress on stderr")
	fs.StringVar(&o.Token, "token", getenv("PARLEY_TOKEN"), "session `token` to sign in with (default $PARLEY_TOKEN)")
}

// addRouteFlag defines --route, for the workloads whose requests have a
// partition (kv, queue and chat-post).
func addRouteFlag(fs *flagSet, o *BenchOptions) {
	fs.BoolVar(&o.Route, "route", true, "send each request to the server of --servers that leads its partition, as GET /api/v1/partitions says (--route=false: round-robin, each server forwarding to the leader)")
}

// pool returns the client.Pool over clients when --route is on, with its
// first partition map fetched, and says in params how requests were
// sent; nil when off.
func (o *BenchOptions) pool(ctx context.Context, clients []*client.Client, params map[string]string) (*client.Pool, error) {
	if !o.Route {
		params["routing"] = "round-robin over the servers"
		return nil, nil
	}
	p := client.NewPool(clients...)
	if err := p.Refresh(ctx); err != nil {
		return nil, fmt.Errorf("--route: partition map: %w", err)
	}
	led, parts := p.Reach()
	params["routing"] = fmt.Sprintf("to each partition's leader (client.Pool): %d of %d partitions led by a server of --servers", led, parts)
	return p, nil
}

// check validates the shared measuring flags.
func (o *BenchOptions) check() error {
	if len(o.Servers) == 0 {
		return fmt.Errorf("--servers: give at least one URL")
	}
	for _, s := range o.Servers {
		if err := checkServerURL(s); err != nil {
			return fmt.Errorf("--servers: %w", err)
		}
	}
	switch {
	case o.Clients < 1:
		return fmt.Errorf("--clients %d: want at least 1", o.Clients)
	case o.Requests < 0:
		return fmt.Errorf("--requests %d: must not be negative", o.Requests)
	case o.Duration < 0 || o.Warmup < 0 || o.Timeout < 0:
		return fmt.Errorf("--duration, --warmup and --timeout must not be negative")
	}
	if o.Requests == 0 && o.Duration == 0 {
		return fmt.Errorf("--duration 0 needs --requests")
	}
	return nil
}

// runBenchKV is the action of `parley bench kv`.
func runBenchKV(ctx context.Context, e *Env, path string, args []string) error {
	o, err := ParseBenchKV(path, args, e.getenv)
	if err != nil {
		return err
	}
	if err := o.signIn(e); err != nil {
		return err
	}
	return BenchKV(ctx, o, e.Stdout, e.Stderr)
}

// ParseBenchKV reads the flags of `parley bench kv`.
func ParseBenchKV(path string, args []string, getenv func(string) string) (BenchKVOptions, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var o BenchKVOptions
	fs := newFlagSet(path, "[flags]", `
Load running nodes with KV puts, gets or both, and report throughput,
latency percentiles (50/66/75/80/90/95/98/99/100, as Apache Bench) and a
per-second timeline. For gets the keyspace is filled first.`)
	addBenchFlags(fs, &o.BenchOptions, getenv)
	addRouteFlag(fs, &o.BenchOptions)
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

// BenchKV runs the KV workload and prints the report to stdout (progress
// to stderr), writing the files asked for.
func BenchKV(ctx context.Context, o BenchKVOptions, stdout, stderr io.Writer) error {
	hc, done := benchHTTPClient(o.Clients, len(o.Servers))
	defer done()
	clients, err := readyClients(ctx, hc, o.Servers, o.Token)
	if err != nil {
		return err
	}
	params := map[string]string{
		"servers":    strings.Join(o.Servers, ","),
		"value_size": strconv.Itoa(o.ValueSize),
		"keys":       strconv.Itoa(o.Keys),
	}
	pool, err := o.pool(ctx, clients, params)
	if err != nil {
		return err
	}
	w, err := bench.NewKV(bench.KVOptions{Clients: clients, Mix: o.Mix, ValueSize: o.ValueSize, Keys: o.Keys, KeyPrefix: o.KeyPrefix, Pool: pool})
	if err != nil {
		return err
	}
	// Where the proposals spent their time, from the servers' histograms.
	before, err := scrapePhases(ctx, hc, o.Servers)
	if err != nil {
		fmt.Fprintf(stderr, "no proposal phases in the report: %v\n", err)
	}
	return runBenchThen(ctx, w, o.BenchOptions, params, stdout, stderr, func(rep *bench.Report) {
		if before == nil {
			return
		}
		if after, err := scrapePhases(ctx, hc, o.Servers); err == nil {
			addPhaseParams(rep.Params, before, after)
		}
	})
}

// runBench measures w and writes the report; the part every workload
// shares.
func runBench(ctx context.Context, w bench.Workload, o BenchOptions, params map[string]string, stdout, stderr io.Writer) error {
	return runBenchThen(ctx, w, o, params, stdout, stderr, nil)
}

// runBenchThen is runBench with after, when not nil, called once the run
// ended and before the report is written, to add the workload's own
// figures to the report's Params.
func runBenchThen(ctx context.Context, w bench.Workload, o BenchOptions, params map[string]string, stdout, stderr io.Writer, after func(rep *bench.Report)) error {
	bo := bench.Options{Workers: o.Clients, Duration: o.Duration, Requests: o.Requests, Warmup: o.Warmup, Timeout: o.Timeout}
	if !o.Quiet {
		bo.Progress = func(s bench.Second) {
			fmt.Fprintf(stderr, "%4ds  %8.0f ops/s  %5d errors  p50 %7.2f ms  p99 %7.2f ms\n",
				s.Second+1, s.OpsPerS, s.Errors, s.Latency.At(50), s.Latency.At(99))
		}
		fmt.Fprintf(stderr, "benchmarking %s with %s against %s\n", w.Name(), plural(o.Clients, "client"), strings.Join(o.Servers, ", "))
	}
	rep, err := bench.Run(ctx, w, bo)
	if err != nil {
		return err
	}
	rep.Params = params
	if after != nil {
		after(rep)
	}
	if !o.Quiet {
		fmt.Fprintln(stderr)
	}
	if err := bench.WriteText(stdout, rep); err != nil {
		return err
	}
	for _, out := range []struct {
		file  string
		write func(io.Writer, *bench.Report) error
	}{{o.CSV, bench.WriteCSV}, {o.JSON, bench.WriteJSON}, {o.SVG, bench.WriteSVG}} {
		if out.file == "" {
			continue
		}
		if err := writeFile(out.file, rep, out.write); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes rep to the file name with write.
func writeFile(name string, rep *bench.Report, write func(io.Writer, *bench.Report) error) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := write(f, rep); err != nil {
		_ = f.Close()
		return fmt.Errorf("write report %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report %s: %w", name, err)
	}
	return nil
}

// benchHTTPClient returns one HTTP client for every worker: a shared
// transport keeping an idle connection per worker and server, so the
// measurement never waits for connection set-up. done releases it.
func benchHTTPClient(workers, servers int) (*http.Client, func()) {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        workers*servers + servers,
		MaxIdleConnsPerHost: workers + 1,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		TLSHandshakeTimeout: 5 * time.Second,
	}
	return &http.Client{Transport: tr}, tr.CloseIdleConnections
}

// readyWait is how long a benchmark waits for each server to be ready: a
// node started just before may still be hearing from its replicas'
// leaders (GET /readyz).
const readyWait = 10 * time.Second

// readyClients returns a client per server, after waiting until each is
// ready to serve.
func readyClients(ctx context.Context, hc *http.Client, servers []string, token string) ([]*client.Client, error) {
	var cs []*client.Client
	for _, s := range servers {
		c := client.New(s, client.WithHTTPClient(hc), client.WithToken(token))
		if err := waitReady(ctx, c, readyWait); err != nil {
			return nil, fmt.Errorf("server %s is not ready after %v: %s", s, readyWait, describe(err))
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// waitReady asks c's node whether it is ready, every 100 ms, until it is
// or within has passed; it returns the last answer's error.
func waitReady(ctx context.Context, c *client.Client, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		err := c.Readyz(ctx)
		if err == nil || sleepCtx(ctx, 100*time.Millisecond) != nil {
			return err
		}
	}
}

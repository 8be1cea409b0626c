package cli

import (
	"context"
	"errors"
	"io"
	"strconv"

	"github.com/parley-chat/parley/internal/bench"
)

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

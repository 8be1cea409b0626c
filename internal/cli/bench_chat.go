package cli

import (
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/parley-chat/parley/internal/bench"
)

// BenchChatOptions configure `parley bench chat-post`.
type BenchChatOptions struct {
	BenchOptions
	// Rooms is the number of rooms posted to.
	Rooms int
	// Size is the length of each message text in characters.
	Size int
	// RoomPrefix starts every room name the benchmark creates.
	RoomPrefix string
}

// runBenchChat is the action of `parley bench chat-post`.
func runBenchChat(ctx context.Context, e *Env, path string, args []string) error {
	o, err := ParseBenchChat(path, args, e.getenv)
	if err != nil {
		return err
	}
	if err := o.signIn(e); err != nil {
		return err
	}
	return BenchChat(ctx, o, e.Stdout, e.Stderr)
}

// ParseBenchChat reads the flags of `parley bench chat-post`.
func ParseBenchChat(path string, args []string, getenv func(string) string) (BenchChatOptions, error) {
	var o BenchChatOptions
	fs := newFlagSet(path, "[flags]", `
Post durable messages to rooms and report throughput, latency percentiles
(50/66/75/80/90/95/98/99/100, as Apache Bench) and a per-second timeline.
The signed-in user first creates --rooms rooms (and so joins them); every
post carries its own idempotency key, as a client that retries safely sends
it, and is acknowledged once committed on a majority.`)
	addBenchFlags(fs, &o.BenchOptions, orNoEnv(getenv))
	addRouteFlag(fs, &o.BenchOptions)
	addRoomFlags(fs, &o)
	if err := parseBench(fs, path, args, getenv, &o.BenchOptions); err != nil {
		return o, err
	}
	return o, checkRoomFlags(path, &o)
}

// addRoomFlags defines the flags that shape the chat workloads.
func addRoomFlags(fs *flagSet, o *BenchChatOptions) {
	fs.IntVar(&o.Rooms, "rooms", 16, "number of `rooms` posted to")
	fs.IntVar(&o.Size, "size", 200, "message length in `characters` (the seeds measured 200 and 2000)")
	fs.StringVar(&o.RoomPrefix, "room-prefix", "bench-", "`prefix` of the room names (a run id follows)")
}

// checkRoomFlags validates the chat workload flags.
func checkRoomFlags(path string, o *BenchChatOptions) error {
	switch {
	case o.Rooms < 1:
		return usagef(path, "--rooms %d: want at least 1", o.Rooms)
	case o.Size < 1:
		return usagef(path, "--size %d: want at least 1", o.Size)
	}
	return nil
}

// parseBench parses args into fs, refuses positional arguments and checks
// the shared measuring flags. --requests alone means no time limit.
func parseBench(fs *flagSet, path string, args []string, getenv func(string) string, o *BenchOptions) error {
	pos, err := fs.parse(args, orNoEnv(getenv))
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(path, "unexpected argument %q", pos[0])
	}
	if o.Requests > 0 && !given(fs, "duration") {
		o.Duration = 0 // --requests alone: run until the count is done
	}
	if err := o.check(); err != nil {
		return &usageError{path: path, err: err}
	}
	return nil
}

// orNoEnv returns getenv, or a lookup that finds nothing when it is nil.
func orNoEnv(getenv func(string) string) func(string) string {
	if getenv == nil {
		return func(string) string { return "" }
	}
	return getenv
}

// BenchChat runs the chat-post workload and prints the report to stdout
// (progress to stderr), writing the files asked for.
func BenchChat(ctx context.Context, o BenchChatOptions, stdout, stderr io.Writer) error {
	hc, done := benchHTTPClient(o.Clients, len(o.Servers))
	defer done()
	clients, err := readyClients(ctx, hc, o.Servers, o.Token)
	if err != nil {
		return err
	}
	params := map[string]string{
		"servers": strings.Join(o.Servers, ","),
		"rooms":   strconv.Itoa(o.Rooms),
		"size":    strconv.Itoa(o.Size) + " characters",
	}
	pool, err := o.pool(ctx, clients, params)
	if err != nil {
		return err
	}
	w, err := bench.NewChat(bench.ChatOptions{Clients: clients, Rooms: o.Rooms, Size: o.Size, RoomPrefix: o.RoomPrefix, Pool: pool})
	if err != nil {
		return err
	}
	return runBench(ctx, w, o.BenchOptions, params, stdout, stderr)
}

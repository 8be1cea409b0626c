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

// BenchFanoutOptions configure `parley bench chat-fanout`.
type BenchFanoutOptions struct {
	BenchChatOptions
	// Subscribers is the number of streams, each subscribed to every room.
	Subscribers int
	// Drain is how long to wait after the run for the last deliveries.
	Drain time.Duration
}

// runBenchFanout is the action of `parley bench chat-fanout`.
func runBenchFanout(ctx context.Context, e *Env, path string, args []string) error {
	o, err := ParseBenchFanout(path, args, e.getenv)
	if err != nil {
		return err
	}
	if err := o.signIn(e); err != nil {
		return err
	}
	return BenchFanout(ctx, o, e.Stdout, e.Stderr)
}

// ParseBenchFanout reads the flags of `parley bench chat-fanout`.
func ParseBenchFanout(path string, args []string, getenv func(string) string) (BenchFanoutOptions, error) {
	var o BenchFanoutOptions
	fs := newFlagSet(path, "[flags]", `
Post to rooms while --subscribers WebSocket streams (GET /api/v1/stream),
spread over the servers, each subscribed to every room, receive every post.
Each post's text starts with its send time, so the report gives the posts'
own throughput and latency percentiles and, beside them, the
post-to-delivery latency of every delivery (the product's target, docs/BENCHMARKS.md: delivery
p99 at most 3 x the post p99), and whether every post reached every
subscriber.`)
	addBenchFlags(fs, &o.BenchOptions, orNoEnv(getenv))
	addRoomFlags(fs, &o.BenchChatOptions)
	fs.IntVar(&o.Subscribers, "subscribers", 100, "`streams`, each subscribed to every room")
	fs.DurationVar(&o.Drain, "drain", 10*time.Second, "after the run, wait up to this long for the last deliveries")
	fs.Lookup("rooms").DefValue = "100"
	o.Rooms = 100
	if err := parseBench(fs, path, args, getenv, &o.BenchOptions); err != nil {
		return o, err
	}
	if err := checkRoomFlags(path, &o.BenchChatOptions); err != nil {
		return o, err
	}
	switch {
	case o.Subscribers < 1:
		return o, usagef(path, "--subscribers %d: want at least 1", o.Subscribers)
	case o.Size < 21:
		return o, usagef(path, "--size %d: want at least 21 (each text carries its send time)", o.Size)
	case o.Drain < 0:
		return o, usagef(path, "--drain must not be negative")
	}
	return o, nil
}

// BenchFanout runs the chat-fanout workload and prints the report to
// stdout (progress to stderr), writing the files asked for.
func BenchFanout(ctx context.Context, o BenchFanoutOptions, stdout, stderr io.Writer) error {
	hc, done := benchHTTPClient(o.Clients+o.Subscribers, len(o.Servers))
	defer done()
	clients, err := readyClients(ctx, hc, o.Servers, o.Token)
	if err != nil {
		return err
	}
	w, err := bench.NewFanout(bench.FanoutOptions{
		ChatOptions: bench.ChatOptions{Clients: clients, Rooms: o.Rooms, Size: o.Size, RoomPrefix: o.RoomPrefix},
		Servers:     o.Servers, Token: o.Token, HTTP: hc, Subscribers: o.Subscribers,
	})
	if err != nil {
		return err
	}
	defer w.Close()
	params := map[string]string{
		"servers":     strings.Join(o.Servers, ","),
		"rooms":       strconv.Itoa(o.Rooms),
		"subscribers": strconv.Itoa(o.Subscribers) + " streams, each subscribed to every room",
		"size":        strconv.Itoa(o.Size) + " characters",
	}
	return runBenchThen(ctx, w, o.BenchOptions, params, stdout, stderr, func(rep *bench.Report) {
		addFanoutParams(rep, w.Finish(o.Drain))
	})
}

// addFanoutParams adds what the subscribers saw to the report.
func addFanoutParams(rep *bench.Report, r bench.FanoutResult) {
	p := rep.Params
	p["deliveries"] = fmt.Sprintf("%d of %d expected (%d posts incl. warm-up x subscribers)", r.Delivered, r.Expected, r.Posts)
	for _, q := range []float64{50, 99, 100} {
		p[fmt.Sprintf("delivery_p%g_ms", q)] = strconv.FormatFloat(r.Delivery.At(q), 'f', 3, 64)
	}
	if post := rep.Latency.At(99); post > 0 {
		p["delivery_p99_over_post_p99"] = strconv.FormatFloat(r.Delivery.At(99)/post, 'f', 2, 64)
	}
	if r.StreamErrors > 0 {
		p["stream_errors"] = fmt.Sprintf("%d (latest: %s)", r.StreamErrors, r.LastError)
	}
}

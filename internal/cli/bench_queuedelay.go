package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/internal/bench"
)

// BenchQueueDelayOptions configure `parley bench queue-delay`.
type BenchQueueDelayOptions struct {
	BenchOptions
	// Messages is how many delayed messages are sent.
	Messages int
	// Delay is how far ahead each message is due.
	Delay time.Duration
	// Rate is how many are sent per second.
	Rate int
}

// runBenchQueueDelay is the action of `parley bench queue-delay`.
func runBenchQueueDelay(ctx context.Context, e *Env, path string, args []string) error {
	var o BenchQueueDelayOptions
	fs := newFlagSet(path, "[flags]", `
Measure how accurately delayed queue messages are delivered: send
--messages messages at --rate per second, each due --delay after its send
(an absolute deliver_at), while --clients consumers long-poll the queue;
report how late after its due time each was received (percentiles, as
Apache Bench), how many arrived early and by how much at most, and any
duplicates. Every message must arrive: one missing a minute after the
last was due fails the run.`)
	addBenchFlags(fs, &o.BenchOptions, orNoEnv(e.getenv))
	fs.IntVar(&o.Messages, "messages", 500, "how many delayed `messages` to send")
	fs.DurationVar(&o.Delay, "delay", 2*time.Second, "how far after its send each message is due")
	fs.IntVar(&o.Rate, "rate", 100, "messages sent per `second`")
	if err := parseBench(fs, path, args, e.getenv, &o.BenchOptions); err != nil {
		return err
	}
	switch {
	case o.Messages < 1 || o.Rate < 1:
		return usagef(path, "--messages %d and --rate %d: want at least 1", o.Messages, o.Rate)
	case o.Delay < time.Millisecond:
		return usagef(path, "--delay %v: want at least 1ms", o.Delay)
	}
	if err := o.signIn(e); err != nil {
		return err
	}
	hc, done := benchHTTPClient(o.Clients+1, len(o.Servers))
	defer done()
	clients, err := readyClients(ctx, hc, o.Servers, o.Token)
	if err != nil {
		return err
	}
	res, err := bench.RunQueueDelay(ctx, bench.QueueDelayOptions{
		Clients: clients, Messages: o.Messages, Delay: o.Delay, Rate: o.Rate, Consumers: o.Clients, QueuePrefix: "bench-",
	})
	if res != nil {
		writeQueueDelay(e.Stdout, o, res)
		if o.JSON != "" {
			b, _ := json.MarshalIndent(res, "", "  ")
			if werr := os.WriteFile(o.JSON, append(b, '\n'), 0o644); werr != nil && err == nil {
				err = werr
			}
		}
	}
	return err
}

// writeQueueDelay prints the result of a delayed delivery run.
func writeQueueDelay(w io.Writer, o BenchQueueDelayOptions, r *bench.QueueDelayResult) {
	fmt.Fprintf(w, "delayed delivery: %d messages due %v after their send, %d/s, %d consumers, servers %s\n",
		o.Messages, o.Delay, o.Rate, o.Clients, strings.Join(o.Servers, ","))
	fmt.Fprintf(w, "sent %d, received %d, early %d (at most %.1f ms), duplicates %d\n\n", r.Sent, r.Received, r.Early, r.EarliestMs, r.Duplicates)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "late after due\tms\t")
	for _, p := range r.Late.Percentiles {
		fmt.Fprintf(tw, "%g%%\t%.1f\t\n", p.P, p.Ms)
	}
	_ = tw.Flush()
}

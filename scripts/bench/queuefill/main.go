// Command queuefill sends messages to a queue and consumes none, so that a
// cluster holds them: scripts/bench/curves.sh measures memory against the
// messages held with it. (`parley bench queue` paces its producers by its
// consumers and so never lets a queue grow.) It sends batches of up to 100
// messages (POST /api/v1/queues/{q}/messages/batch) from --clients
// goroutines spread over --servers, stops after --messages, and prints how
// long that took. It is not part of the parley binary.
//
//	go run ./scripts/bench/queuefill --servers URL,URL --queue fill --messages 100000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/client"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "queuefill:", err)
		os.Exit(1)
	}
}

// batchSize is the most messages one batch send carries (docs/API.md).
const batchSize = 100

// run parses args and sends the messages.
func run(args []string) error {
	fs := flag.NewFlagSet("queuefill", flag.ContinueOnError)
	servers := fs.String("servers", "http://127.0.0.1:7070", "base URLs of the nodes, comma separated; clients are spread over them")
	token := fs.String("token", os.Getenv("PARLEY_TOKEN"), "session token (default $PARLEY_TOKEN)")
	queue := fs.String("queue", "fill", "name of the queue to send to, or with --queues > 1 their prefix (NAME-0, NAME-1...); created when missing")
	queues := fs.Int("queues", 1, "queues to spread the messages over (batch b goes to queue b mod --queues)")
	messages := fs.Int("messages", 10000, "messages to send")
	size := fs.Int("size", 200, "message length in characters")
	clients := fs.Int("clients", 8, "concurrent senders")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *messages < 0 || *size < 1 || *clients < 1 || *queues < 1 {
		return errors.New("--messages must not be negative, --size, --clients and --queues at least 1")
	}
	var cs []*client.Client
	for u := range strings.SplitSeq(*servers, ",") {
		if u = strings.TrimSpace(u); u != "" {
			cs = append(cs, client.New(u, client.WithToken(*token)))
		}
	}
	if len(cs) == 0 {
		return errors.New("no --servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	names := []string{*queue}
	if *queues > 1 {
		names = names[:0]
		for q := range *queues {
			names = append(names, fmt.Sprintf("%s-%d", *queue, q))
		}
	}
	for _, q := range names {
		if _, err := cs[0].CreateQueue(ctx, q); err != nil {
			if ce, ok := errors.AsType[*client.Error](err); !ok || ce.Status != http.StatusConflict {
				return fmt.Errorf("create queue %s: %w", q, err)
			}
		}
	}
	body := strings.Repeat("m", *size)
	batches := (*messages + batchSize - 1) / batchSize
	var next atomic.Int64
	var sent atomic.Int64
	var once sync.Once
	var first error
	start := time.Now()
	var wg sync.WaitGroup
	for w := range *clients {
		wg.Go(func() {
			c := cs[w%len(cs)]
			msgs := make([]client.BatchMessage, 0, batchSize)
			for ctx.Err() == nil {
				b := int(next.Add(1) - 1)
				if b >= batches {
					return
				}
				n := min(batchSize, *messages-b*batchSize)
				msgs = msgs[:0]
				for range n {
					msgs = append(msgs, client.BatchMessage{Body: body})
				}
				if _, _, err := c.SendBatch(ctx, names[b%len(names)], msgs); err != nil {
					once.Do(func() { first = fmt.Errorf("batch %d: %w", b, err); cancel() })
					return
				}
				sent.Add(int64(n))
			}
		})
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	el := time.Since(start).Seconds()
	fmt.Printf("sent %d messages of %d characters to %d queues in %.1f s (%.0f messages/s)\n", sent.Load(), *size, len(names), el, float64(sent.Load())/el)
	return first
}

package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/parley-chat/parley/client"
)

// consumerID names the one consumer `parley queue consume` runs on its
// stream.
const consumerID = "cli"

// runQueueConsume is `parley queue consume QUEUE`: a consumer on a live
// stream that writes out each message the server pushes, then
// acknowledges it.
func runQueueConsume(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var f messageFlags
	var o client.ConsumeOptions
	var count int
	fs := newFlagSet(path, "QUEUE [flags]", `
Follow a queue: the server pushes each message for you or for anyone as it
arrives (a consumer on a live stream, as AMQP consumers get deliveries),
and each is acknowledged once it was written out. Up to --prefetch
messages are leased to the command at once; those it had not written out
when it ends go back to the queue at once. It runs until interrupted,
until --count messages, or until the connection ends: then it fails, and
running it again delivers nothing it acknowledged. --timeout bounds
opening the stream only.

Each body goes to standard output as it was sent, byte for byte, when
standard output is a file or a pipe; on a terminal the characters it would
act on are escaped (\x1b, \u202e, and \\ for a backslash), as a body may
hold anything. Each message's id, sender and time go to standard error.`)
	addClientFlags(fs, &co)
	fs.StringVar(&o.From, "from", "", "only messages from this `sender`")
	fs.IntVar(&o.Prefetch, "prefetch", 1, "lease up to `n` messages at once (1 to 100)")
	fs.DurationVar(&o.AckTimeout, "ack-timeout", 30*time.Second, "lease each message for this `duration` until it is written out")
	fs.IntVar(&count, "count", 0, "stop after `n` messages (0: run until interrupted)")
	fs.BoolVar(&f.asJSON, "json", false, "print each message as JSON")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	switch {
	case o.Prefetch < 1 || o.Prefetch > 100:
		return usagef(path, "--prefetch %d: want 1 to 100", o.Prefetch)
	case count < 0:
		return usagef(path, "--count %d: want 0 (no end) or more", count)
	case o.AckTimeout < time.Millisecond:
		return usagef(path, "--ack-timeout %s: want at least 1ms", o.AckTimeout)
	}
	dctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	st, err := co.newClient().Stream(dctx, client.StreamOptions{})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Consume(dctx, consumerID, pos[0], o); err != nil {
		return err
	}
	for n := 0; count == 0 || n < count; {
		fr, err := st.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: the messages not written out go back
			}
			return err
		}
		switch {
		case fr.Type == client.FrameError && fr.Code == "conflict" && fr.Queue == consumerID:
			// An ack came too late (the lease lapsed): the message comes again.
			fmt.Fprintf(e.Stderr, "warning: %s\n", termSafe(fr.Message))
		case fr.Type == client.FrameError:
			return fmt.Errorf("%s: %s", fr.Code, termSafe(fr.Message))
		case fr.Type == client.FrameQueueMessage && fr.Delivery != nil:
			m := *fr.Delivery
			if !f.asJSON {
				m.Receipt = "" // acknowledged here: nothing for the reader to do
			}
			if err := writeMessage(e, f, m, true); err != nil {
				return err
			}
			if err := st.AckQueue(ctx, consumerID, fr.Delivery.Receipt); err != nil {
				return err
			}
			n++
		}
	}
	return nil
}

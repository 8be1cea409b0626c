package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// settingsFlags are the queue settings flags of create and configure.
type settingsFlags struct {
	maxDeliveries, maxLength uint64
	deadLetter, overflow     string
	ttl                      time.Duration
}

func addSettingsFlags(fs *flagSet, f *settingsFlags) {
	fs.Uint64Var(&f.maxDeliveries, "max-deliveries", 20, "dead-letter a message after this many leases (`n`, 0 for unlimited)")
	fs.StringVar(&f.deadLetter, "dead-letter", "", "send dead letters to this `queue` (\"\" drops them)")
	fs.DurationVar(&f.ttl, "ttl", 0, "expire messages this long after their send (`duration`, 0 for never)")
	fs.Uint64Var(&f.maxLength, "max-length", 0, "hold at most this many messages not leased (`n`, 0 for unlimited)")
	fs.StringVar(&f.overflow, "overflow", "reject", "what a send to a full queue does: reject or drop_oldest (`mode`)")
}

// settings returns the settings given on the command line.
func (f *settingsFlags) settings(fs *flagSet) client.QueueSettings {
	var s client.QueueSettings
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "max-deliveries":
			s.MaxDeliveries = &f.maxDeliveries
		case "dead-letter":
			s.DeadLetter = &f.deadLetter
		case "ttl":
			ms := f.ttl.Milliseconds()
			s.TTLMs = &ms
		case "max-length":
			s.MaxLength = &f.maxLength
		case "overflow":
			s.Overflow = &f.overflow
		}
	})
	return s
}

// runQueueConfigure is `parley queue configure QUEUE`.
func runQueueConfigure(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var sf settingsFlags
	fs := newFlagSet(path, "QUEUE [flags]", "Change the settings given as flags (the queue's creator or an admin may).")
	addClientFlags(fs, &co)
	addSettingsFlags(fs, &sf)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var set client.QueueConfig
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		set, err = c.ConfigureQueue(ctx, pos[0], sf.settings(fs))
		return err
	})
	if err != nil {
		return err
	}
	return printJSON(e.Stdout, set)
}

// runQueueStats is `parley queue stats QUEUE`.
func runQueueStats(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var asJSON bool
	fs := newFlagSet(path, "QUEUE [flags]", `
Show a queue's settings and counts: messages ready, leased, delayed and
waiting behind their FIFO group, dead letters held, and since its creation
the messages dead-lettered, dropped and expired.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&asJSON, "json", false, "print the queue as JSON")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var q client.Queue
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		q, err = c.GetQueue(ctx, pos[0])
		return err
	})
	if err != nil || asJSON {
		if err == nil {
			err = printJSON(e.Stdout, q)
		}
		return err
	}
	st := q.Stats
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "queue\t%s\ncreator\t%s\n", termSafe(q.Name), termSafe(q.Creator))
	fmt.Fprintf(tw, "ready\t%d\nleased\t%d\ndelayed\t%d\nwaiting\t%d\ndead letters\t%d\n", st.Ready, st.Leased, st.Delayed, st.Waiting, st.DeadLetters)
	fmt.Fprintf(tw, "dead-lettered\t%d\ndropped\t%d\nexpired\t%d\nmoving\t%d\n", st.DeadLettered, st.Dropped, st.Expired, st.Moving)
	if st.OldestAt != 0 {
		fmt.Fprintf(tw, "oldest\t%s\n", formatMs(st.OldestAt))
	}
	fmt.Fprintf(tw, "max deliveries\t%d\ndead letter queue\t%s\nttl ms\t%d\nmax length\t%d\noverflow\t%s\n",
		q.MaxDeliveries, termSafe(q.DeadLetter), q.TTLMs, q.MaxLength, termSafe(q.Overflow))
	return tw.Flush()
}

// runQueueNack is `parley queue nack QUEUE RECEIPT`.
func runQueueNack(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var opts client.NackOptions
	fs := newFlagSet(path, "QUEUE RECEIPT [flags]", `
Give a leased message back: to the queue at once or after --delay, or to
the dead-letter queue with --dead. A message already leased max-deliveries
times goes to the dead-letter queue.`)
	addClientFlags(fs, &co)
	fs.DurationVar(&opts.Delay, "delay", 0, "return the message after this `duration`")
	fs.StringVar(&opts.Reason, "reason", "", "why, kept with the message (`text`)")
	fs.BoolVar(&opts.Dead, "dead", false, "dead-letter the message now")
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) error {
		return c.Nack(ctx, pos[0], pos[1], opts)
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, "nacked")
	return nil
}

// runQueueExtend is `parley queue extend QUEUE RECEIPT`.
func runQueueExtend(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var d time.Duration
	fs := newFlagSet(path, "QUEUE RECEIPT [flags]", "Make a lease last --ack-timeout from now. A lapsed lease is refused (conflict).")
	addClientFlags(fs, &co)
	fs.DurationVar(&d, "ack-timeout", 30*time.Second, "the lease's new length from now (`duration`)")
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	var until int64
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		until, err = c.Extend(ctx, pos[0], pos[1], d)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "lease extended until %s\n", formatMs(until))
	return nil
}

// runQueuePurge is `parley queue purge QUEUE`.
func runQueuePurge(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "QUEUE [flags]", "Remove every message of a queue, leased ones included (its creator or an admin may).")
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var n uint64
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		n, err = c.Purge(ctx, pos[0])
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "purged %d messages from %s\n", n, termSafe(pos[0]))
	return nil
}

// runQueueRedrive is `parley queue redrive QUEUE`.
func runQueueRedrive(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var limit int
	var to string
	fs := newFlagSet(path, "QUEUE [flags]", `
Move the dead letters of QUEUE back to the queues they came from (or to
--to), as new messages, in batches until none is left or --max have moved.`)
	addClientFlags(fs, &co)
	fs.IntVar(&limit, "max", 0, "move at most this many (`n`, 0 for all)")
	fs.StringVar(&to, "to", "", "move them to this `queue` instead")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	if limit < 0 {
		return usagef(path, "--max must not be negative")
	}
	var total uint64
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) error {
		for {
			batch := 1000
			if limit > 0 {
				batch = min(batch, limit-int(total))
			}
			moved, more, err := c.Redrive(ctx, pos[0], batch, to)
			total += moved
			if err != nil || !more || moved == 0 || limit > 0 && int(total) >= limit {
				return err
			}
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "redrove %d dead letters from %s\n", total, termSafe(pos[0]))
	return nil
}

// runQueueBrowse is `parley queue browse QUEUE`.
func runQueueBrowse(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var after uint64
	var limit int
	var asJSON bool
	fs := newFlagSet(path, "QUEUE [flags]", `
List a queue's messages without taking them: all of them for its creator
and admins, else those you may receive. Dead letters show the queue they
came from and why.`)
	addClientFlags(fs, &co)
	fs.Uint64Var(&after, "after", 0, "only messages with an id above this `id`")
	fs.IntVar(&limit, "limit", 50, "at most this many (`n`, up to 500)")
	fs.BoolVar(&asJSON, "json", false, "print the messages as JSON")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var msgs []client.QueueMessage
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		msgs, err = c.Browse(ctx, pos[0], after, limit)
		return err
	})
	if err != nil || asJSON {
		if err == nil {
			err = printJSON(e.Stdout, msgs)
		}
		return err
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tFROM\tPRIORITY\tDELIVERIES\tDEAD LETTER OF\tREASON\tSENT\tBODY")
	for _, m := range msgs {
		reason := m.DeadReason
		if m.LastReason != "" {
			reason += ": " + m.LastReason
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", m.ID, m.State, termSafe(m.Sender), m.Priority, m.Deliveries,
			termSafe(m.Origin), termSafe(reason), formatMs(m.Ts), termSafe(clipBody(m.Body)))
	}
	return tw.Flush()
}

// clipBody shortens a body for a table.
func clipBody(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// runQueueSendBatch is `parley queue send-batch QUEUE`.
func runQueueSendBatch(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var opts client.SendOptions
	fs := newFlagSet(path, "QUEUE [flags]", `
Send each line of standard input as one message (up to 100), all of them
or none, and print their ids. The flags apply to every message.`)
	addClientFlags(fs, &co)
	addSendFlags(fs, &opts)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var msgs []client.BatchMessage
	sc := bufio.NewScanner(e.Stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		msgs = append(msgs, client.BatchMessage{Body: sc.Text(), SendOptions: opts})
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read messages from stdin: %w", err)
	}
	var ids []uint64
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		ids, _, err = c.SendBatch(ctx, pos[0], msgs)
		return err
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		fmt.Fprintf(e.Stdout, "sent message %d to %s\n", id, termSafe(pos[0]))
	}
	return nil
}

// addSendFlags adds the send options' flags but --to.
func addSendFlags(fs *flagSet, opts *client.SendOptions) {
	fs.IntVar(&opts.Priority, "priority", 0, "0 (default) to 9, higher received first (`n`)")
	fs.DurationVar(&opts.Delay, "delay", 0, "deliver after this `duration`")
	fs.Func("deliver-at", "deliver at this `time` (RFC 3339)", func(s string) error {
		t, err := time.Parse(time.RFC3339, s)
		opts.DeliverAt = t
		return err
	})
	fs.DurationVar(&opts.TTL, "ttl", 0, "expire this long after the send (`duration`)")
	fs.StringVar(&opts.Group, "group", "", "FIFO `group`: its messages are delivered in order, one at a time")
}

package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// runQueueCreate is `parley queue create NAME`.
func runQueueCreate(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var sf settingsFlags
	fs := newFlagSet(path, "NAME [flags]", "Create a queue owned by you.")
	addClientFlags(fs, &co)
	addSettingsFlags(fs, &sf)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var q client.Queue
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		q, err = c.CreateQueueWith(ctx, pos[0], sf.settings(fs))
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "created queue %s\n", termSafe(q.Name))
	return nil
}

// runQueueDelete is `parley queue delete NAME`.
func runQueueDelete(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "NAME [flags]", "Delete a queue with all its messages (its creator or an admin may).")
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) error {
		return c.DeleteQueue(ctx, pos[0])
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "deleted queue %s\n", termSafe(pos[0]))
	return nil
}

// runQueueList is `parley queue list`.
func runQueueList(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var waiting, asJSON bool
	fs := newFlagSet(path, "[flags]", `
List every queue with its stored messages (leased ones included) and those
under a lease, or with --waiting only the queues holding a message you may
receive now.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&waiting, "waiting", false, "list only queues with a message waiting for you")
	fs.BoolVar(&asJSON, "json", false, "print the queues as JSON")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	var qs []client.Queue
	err := callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		qs, err = c.ListQueues(ctx, waiting)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSONList(e.Stdout, qs)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tMESSAGES\tIN FLIGHT\tCREATOR\tCREATED")
	for _, q := range qs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", termSafe(q.Name), q.Messages, q.InFlight, termSafe(q.Creator), formatMs(q.CreatedAt))
	}
	return tw.Flush()
}

// runQueueSend is `parley queue send QUEUE BODY`.
func runQueueSend(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var opts client.SendOptions
	fs := newFlagSet(path, "QUEUE BODY [flags]", `
Send BODY to a queue, for anyone or with --to for one receiver, and print
the message's id. A BODY of "-" reads the body from standard input.`)
	addClientFlags(fs, &co)
	fs.StringVar(&opts.To, "to", "", "send to this `user` only")
	addSendFlags(fs, &opts)
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	body := pos[1]
	if body == "-" {
		b, err := io.ReadAll(e.Stdin) // the server enforces its size limit
		if err != nil {
			return fmt.Errorf("read body from stdin: %w", err)
		}
		body = string(b)
	}
	var r client.SendResult
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		r, err = c.Send(ctx, pos[0], body, opts)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "sent message %d to %s\n", r.ID, termSafe(pos[0]))
	return nil
}

// messageFlags are the output flags of peek and receive.
type messageFlags struct {
	asJSON bool
}

// messageAbout is the help text shared by peek and receive.
const messageAbout = `
The message's body goes to standard output as it was sent, byte for byte,
when standard output is a file or a pipe; on a terminal the characters it
would act on are escaped (\x1b, \u202e, and \\ for a backslash), as a
body may hold anything. Its id, sender and time (and for a leased message
the receipt to ack it with) go to standard error. When no message is
waiting, nothing is printed on standard output ("null" with --json), "no
message" on standard error, and the exit code is 0.`

// writeMessage prints a peeked or received message, or its absence.
func writeMessage(e *Env, f messageFlags, m client.QueueMessage, found bool) error {
	switch {
	case f.asJSON && !found:
		_, err := fmt.Fprintln(e.Stdout, "null")
		return err
	case f.asJSON:
		return printJSON(e.Stdout, m)
	case !found:
		fmt.Fprintln(e.Stderr, "no message")
		return nil
	}
	to := ""
	if m.To != "" {
		to = " to " + termSafe(m.To)
	}
	fmt.Fprintf(e.Stderr, "message %d from %s%s at %s, delivery %d\n", m.ID, termSafe(m.Sender), to, formatMs(m.Ts), m.Deliveries)
	if m.Receipt != "" {
		fmt.Fprintf(e.Stderr, "receipt %s (ack before %s)\n", termSafe(m.Receipt), formatMs(m.LeaseExpiresAt))
	}
	return writeValue(e, []byte(m.Body), true)
}

// runQueuePeek is `parley queue peek QUEUE`.
func runQueuePeek(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var f messageFlags
	var from string
	fs := newFlagSet(path, "QUEUE [flags]", "Show the message receive would take, without taking it.\n"+messageAbout)
	addClientFlags(fs, &co)
	fs.StringVar(&from, "from", "", "only messages from this `sender`")
	fs.BoolVar(&f.asJSON, "json", false, "print the message as JSON")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var m client.QueueMessage
	var found bool
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		m, found, err = c.Peek(ctx, pos[0], from)
		return err
	})
	if err != nil {
		return err
	}
	return writeMessage(e, f, m, found)
}

// runQueueReceive is `parley queue receive QUEUE`.
func runQueueReceive(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var f messageFlags
	var opts client.ReceiveOptions
	fs := newFlagSet(path, "QUEUE [flags]", `
Take the oldest message for you or for anyone. With --ack-timeout the
message is leased instead of removed: ack it with 'parley queue ack QUEUE
RECEIPT' before the lease lapses, or it is delivered again, or name it
with --ack on your next receive. With --wait the command waits that long
for a message to arrive.
`+messageAbout)
	addClientFlags(fs, &co)
	fs.StringVar(&opts.From, "from", "", "only messages from this `sender`")
	fs.DurationVar(&opts.AckTimeout, "ack-timeout", 0, "lease the message for this `duration` instead of removing it")
	fs.DurationVar(&opts.Wait, "wait", 0, "wait up to this `duration` for a message")
	fs.Var(newListValue(&opts.Ack, nil), "ack", "acknowledge these leases first, all or none (`receipts`, comma separated)")
	fs.BoolVar(&f.asJSON, "json", false, "print the message as JSON")
	var many int
	fs.IntVar(&many, "max", 0, "take up to `n` messages (1 to 100) and print them as JSON")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	if opts.AckTimeout < 0 || opts.Wait < 0 {
		return usagef(path, "--ack-timeout and --wait must not be negative")
	}
	if opts.Wait >= co.Timeout {
		co.Timeout = opts.Wait + 10*time.Second // the command outlasts its wait
	}
	if many != 0 {
		return receiveMany(ctx, e, &co, pos[0], many, opts)
	}
	var m client.QueueMessage
	var found bool
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		m, found, err = c.Receive(ctx, pos[0], opts)
		return err
	})
	if err != nil {
		return err
	}
	return writeMessage(e, f, m, found)
}

// receiveMany is `parley queue receive --max N`: the messages as a JSON
// list.
func receiveMany(ctx context.Context, e *Env, co *clientOptions, queue string, n int, opts client.ReceiveOptions) error {
	var msgs []client.QueueMessage
	err := callServer(ctx, co, true, func(ctx context.Context, c *client.Client) (err error) {
		msgs, err = c.ReceiveMany(ctx, queue, n, opts)
		return err
	})
	if err != nil {
		return err
	}
	return printJSONList(e.Stdout, msgs)
}

// runQueueAck is `parley queue ack QUEUE RECEIPT`.
func runQueueAck(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "QUEUE RECEIPT [flags]", `
Acknowledge a leased message, removing it for good. A lapsed lease or an
unknown receipt is refused (conflict): the message may be delivered again.`)
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) error {
		return c.Ack(ctx, pos[0], pos[1])
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, "acked")
	return nil
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/client"
)

// runKVWatch is `parley kv watch`.
func runKVWatch(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var opts client.WatchOptions
	var prefix bool
	var count int
	fs := newFlagSet(path, "KEY|PREFIX [flags]", `
Print every change of KEY (or, with --prefix, of every key starting with
PREFIX) as it happens: one line per event with its partition, revision,
type, key and value (escaped, shortened). The watch reconnects by itself,
on any node, from the last change printed: nothing is missed or printed
twice. Give --after a token (printed to stderr with -v) to resume an earlier
watch. A resume point older than what the cluster keeps ends the watch with
history_compacted.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&prefix, "prefix", false, "watch every key that starts with the argument")
	fs.StringVar(&opts.After, "after", "", "resume `token` of an earlier watch (partition:revision pairs)")
	fs.IntVar(&count, "count", 0, "stop after this many `events` (0: watch until interrupted)")
	verbose := fs.Bool("v", false, "print the starting resume token, and the one after each change, to stderr")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	if prefix {
		opts.Prefix = pos[0]
	} else {
		opts.Key = pos[0]
	}
	c := co.newClient()
	seen := 0
	for attempt := 0; ; attempt++ {
		err := watchOnce(ctx, e, c, &opts, count, &seen, *verbose)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if ce, ok := errors.AsType[*client.Error](err); ok && !ce.Retryable {
			return err
		}
		select { // the node went away: resume elsewhere from the token
		case <-ctx.Done():
			return nil
		case <-time.After(min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second)):
		}
	}
}

// watchOnce runs one watch connection, moving opts.After along; it returns
// nil once count events were printed.
func watchOnce(ctx context.Context, e *Env, c *client.Client, opts *client.WatchOptions, count int, seen *int, verbose bool) error {
	w, err := c.KVWatch(ctx, *opts)
	if err != nil {
		return err
	}
	defer w.Close()
	opts.After = w.Token()
	if verbose {
		fmt.Fprintln(e.Stderr, opts.After)
	}
	for {
		ch, err := w.Next()
		if err != nil {
			return err
		}
		for _, ev := range ch.Events {
			fmt.Fprintf(e.Stdout, "%d:%d %s %s %s\n", ch.Partition, ch.Revision, ev.Type, termSafe(ev.Key), shortValue(ev.Value))
			*seen++
		}
		opts.After = ch.Token
		if verbose {
			fmt.Fprintln(e.Stderr, ch.Token)
		}
		if count > 0 && *seen >= count {
			return nil
		}
	}
}

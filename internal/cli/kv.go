package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// runKVPut is `parley kv put KEY VALUE`.
func runKVPut(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var opts client.PutOptions
	fs := newFlagSet(path, "KEY VALUE [flags]", `
Store VALUE under KEY and print the key's new version. A VALUE of "-" reads
the value from standard input. Put "--" before a value that starts with '-'.`)
	addClientFlags(fs, &co)
	fs.Uint64Var(&opts.IfVersion, "if-version", 0, "store only if the key's current `version` is this one (compare-and-swap)")
	fs.BoolVar(&opts.IfAbsent, "if-absent", false, "store only if the key does not exist")
	fs.StringVar(&opts.IdempotencyKey, "idempotency-key", "", "`key` that makes retries of this write apply once (default: a fresh one)")
	fs.DurationVar(&opts.TTL, "ttl", 0, "expire the key after this `duration` (at least 1s), by the leader's clock")
	fs.Uint64Var(&opts.Lease, "lease", 0, "attach the key to this lease `id` (parley kv lease grant): it goes when the lease does")
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	if opts.IfAbsent && opts.IfVersion != 0 {
		return usagef(path, "--if-absent and --if-version exclude each other")
	}
	value := []byte(pos[1])
	if pos[1] == "-" {
		if value, err = io.ReadAll(e.Stdin); err != nil { // the server enforces its size limit
			return fmt.Errorf("read value from stdin: %w", err)
		}
	}
	if opts.IdempotencyKey == "" {
		opts.IdempotencyKey = randomKey()
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	c := co.newClient()
	var version uint64
	err = retry(ctx, func() (err error) {
		version, err = c.KVPut(ctx, pos[0], value, opts)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, version)
	return nil
}

// runKVGet is `parley kv get KEY`.
func runKVGet(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var opts client.GetOptions
	var verbose bool
	fs := newFlagSet(path, "KEY [flags]", `
Print the value stored under KEY, byte for byte (no newline is added), when
standard output is a file or a pipe: a redirect keeps every byte. On a
terminal the characters it would act on are escaped (\x1b, \u202e, and \\
for a backslash; newlines and tabs stay), since a value may hold anything.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&opts.Stale, "stale", false, "read the nearest replica: faster, but possibly behind the latest write")
	fs.Uint64Var(&opts.Revision, "revision", 0, "read the value the key had at this `revision` of its partition")
	fs.BoolVar(&verbose, "v", false, "print the key's version and revision to stderr")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	c := co.newClient()
	var it client.KVItem
	err = retry(ctx, func() (err error) {
		it, err = c.KVGetItem(ctx, pos[0], opts)
		return err
	})
	if err != nil {
		return err
	}
	if verbose {
		fmt.Fprintf(e.Stderr, "version %d revision %d\n", it.Version, it.Revision)
	}
	return writeValue(e, it.Value, false)
}

// runKVDel is `parley kv del KEY`.
func runKVDel(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var opts client.DeleteOptions
	fs := newFlagSet(path, "KEY [flags]", "Delete KEY.")
	addClientFlags(fs, &co)
	fs.Uint64Var(&opts.IfVersion, "if-version", 0, "delete only if the key's current `version` is this one")
	fs.StringVar(&opts.IdempotencyKey, "idempotency-key", "", "`key` that makes retries of this write apply once (default: a fresh one)")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	if opts.IdempotencyKey == "" {
		opts.IdempotencyKey = randomKey()
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	c := co.newClient()
	return retry(ctx, func() error { return c.KVDelete(ctx, pos[0], opts) })
}

// listPage is the most keys one list request asks for when --limit is
// larger: the server's default cap per request.
const listPage = 1000

// runKVList is `parley kv list`.
func runKVList(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var prefix, after string
	var limit int
	var long bool
	fs := newFlagSet(path, "[flags]", `
Print the keys of the whole cluster in byte order, one per line (with -l: a
table with version, size and modification time). Without --limit every
matching key is listed, page by page. Keys are printed as stored to a file
or a pipe; on a terminal, and always in the -l table, the characters a
terminal would act on are escaped (\x1b, \u202e, and \\ for a backslash).`)
	addClientFlags(fs, &co)
	fs.StringVar(&prefix, "prefix", "", "list only keys starting with this `prefix`")
	fs.StringVar(&after, "after", "", "list only keys sorting after this `key`")
	fs.IntVar(&limit, "limit", 0, "list at most this many `keys` (0: all)")
	fs.BoolVar(&long, "l", false, "long listing: version, size and modification time")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	if limit < 0 {
		return usagef(path, "--limit %d: must not be negative", limit)
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	c := co.newClient()
	out := bufio.NewWriter(e.Stdout)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	showKey := func(k string) string { return k }
	if long || e.stdoutIsTerminal() {
		showKey = termSafe
	}
	if long {
		fmt.Fprintln(tw, "KEY\tVERSION\tSIZE\tMODIFIED")
	}
	// Without --limit, pages of the server's default size are read until an
	// empty one; with it, pages of at most listPage until enough.
	for n := 0; limit == 0 || n < limit; {
		want := 0
		if limit > 0 {
			want = min(listPage, limit-n)
		}
		var page []client.KVKey
		err := retry(ctx, func() (err error) {
			page, err = c.KVList(ctx, prefix, after, want)
			return err
		})
		if err != nil {
			return err
		}
		for _, k := range page {
			if long {
				mod := time.UnixMilli(k.ModifiedMs).UTC().Format(time.RFC3339)
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", showKey(k.Key), k.Version, k.Size, mod)
			} else {
				fmt.Fprintln(out, showKey(k.Key))
			}
		}
		n += len(page)
		if len(page) == 0 || (want > 0 && len(page) < want) {
			break
		}
		after = page[len(page)-1].Key
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return out.Flush()
}

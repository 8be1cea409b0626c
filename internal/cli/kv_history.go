package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// runKVHistory is `parley kv history KEY`.
func runKVHistory(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "KEY [flags]", `
Print the kept versions of KEY, oldest first: the revision of its partition
that wrote each, put, delete or expire, the version, when, and the value
(escaped, shortened). Read one in full with kv get --revision.`)
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	c := co.newClient()
	var h client.KVHistory
	if err := retry(ctx, func() (err error) { h, err = c.KVHistory(ctx, pos[0]); return err }); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tTYPE\tVERSION\tMODIFIED\tVALUE")
	for _, v := range h.Versions {
		mod := time.UnixMilli(v.ModifiedMs).UTC().Format(time.RFC3339)
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\n", v.Revision, v.Type, v.Version, mod, shortValue(v.Value))
	}
	return tw.Flush()
}

// shortValue is a value for a table: escaped, at most 40 characters.
func shortValue(v []byte) string {
	s := termSafe(string(v))
	if r := []rune(s); len(r) > 40 {
		s = string(r[:39]) + "…"
	}
	return strings.ReplaceAll(s, "\n", `\n`)
}

// repeated is a flag that may be given many times, each value kept whole.
type repeated []string

func (r *repeated) String() string { return strings.Join(*r, "; ") }

// Set implements flag.Value.
func (r *repeated) Set(s string) error { *r = append(*r, s); return nil }

// runKVTxn is `parley kv txn`.
func runKVTxn(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var ifs, ifValues, thens, elses repeated
	var t client.Txn
	fs := newFlagSet(path, "[flags]", `
Run a transaction: when every --if and --if-value holds, the --then
operations run, else the --else ones, atomically. Operations are "put KEY
VALUE", "delete KEY" and "get KEY". Every key must live in one partition:
give related keys one {tag}, as in {cart42}/items and {cart42}/total.
Prints which branch ran, the revision, and each operation's answer.`)
	addClientFlags(fs, &co)
	fs.Var(&ifs, "if", "`KEY=VERSION`: the key is at this version (0: it is missing); repeatable")
	fs.Var(&ifValues, "if-value", "`KEY=VALUE`: the key holds this value; repeatable")
	fs.Var(&thens, "then", "`operation` run when the comparisons hold; repeatable")
	fs.Var(&elses, "else", "`operation` run when they do not; repeatable")
	fs.StringVar(&t.IdempotencyKey, "idempotency-key", "", "`key` that makes retries of this transaction apply once (default: a fresh one)")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	if err := buildTxn(&t, ifs, ifValues, thens, elses); err != nil {
		return usagef(path, "%v", err)
	}
	if t.IdempotencyKey == "" {
		t.IdempotencyKey = randomKey()
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	c := co.newClient()
	var res client.TxnResult
	if err := retry(ctx, func() (err error) { res, err = c.KVTxn(ctx, t); return err }); err != nil {
		return err
	}
	branch := "else"
	if res.Succeeded {
		branch = "then"
	}
	fmt.Fprintf(e.Stdout, "%s ran at revision %d\n", branch, res.Revision)
	for _, r := range res.Results {
		switch {
		case r.Op == "get" && r.Found:
			fmt.Fprintf(e.Stdout, "get %s: version %d: %s\n", termSafe(r.Key), r.Version, shortValue(r.Value))
		case !r.Found:
			fmt.Fprintf(e.Stdout, "%s %s: not found\n", r.Op, termSafe(r.Key))
		default:
			fmt.Fprintf(e.Stdout, "%s %s: version %d\n", r.Op, termSafe(r.Key), r.Version)
		}
	}
	return nil
}

// buildTxn reads the comparisons and operations of kv txn's flags.
func buildTxn(t *client.Txn, ifs, ifValues, thens, elses []string) error {
	for _, s := range ifs {
		key, v, ok := strings.Cut(s, "=")
		var version uint64
		if _, err := fmt.Sscan(v, &version); !ok || err != nil || key == "" {
			return fmt.Errorf("--if %q: want KEY=VERSION", s)
		}
		t.Compare = append(t.Compare, client.TxnCompare{Key: key, Version: version})
	}
	for _, s := range ifValues {
		key, v, ok := strings.Cut(s, "=")
		if !ok || key == "" {
			return fmt.Errorf("--if-value %q: want KEY=VALUE", s)
		}
		t.Compare = append(t.Compare, client.TxnCompare{Key: key, Value: []byte(v)})
	}
	for _, b := range []struct {
		flag string
		in   []string
		out  *[]client.TxnOp
	}{{"--then", thens, &t.Success}, {"--else", elses, &t.Failure}} {
		for _, s := range b.in {
			op, err := parseTxnOp(s)
			if err != nil {
				return fmt.Errorf("%s %q: %w", b.flag, s, err)
			}
			*b.out = append(*b.out, op)
		}
	}
	if len(t.Success) == 0 && len(t.Failure) == 0 {
		return fmt.Errorf("give at least one --then or --else operation")
	}
	return nil
}

// parseTxnOp reads "put KEY VALUE", "delete KEY" or "get KEY"; a put's
// value is the rest of the text after the key.
func parseTxnOp(s string) (client.TxnOp, error) {
	verb, rest, _ := strings.Cut(s, " ")
	key, value, hasValue := strings.Cut(rest, " ")
	switch {
	case key == "":
		return client.TxnOp{}, fmt.Errorf("missing key")
	case verb == "put" && hasValue:
		return client.TxnPut(key, []byte(value)), nil
	case verb == "delete" && !hasValue:
		return client.TxnDelete(key), nil
	case verb == "get" && !hasValue:
		return client.TxnGet(key), nil
	}
	return client.TxnOp{}, fmt.Errorf(`want "put KEY VALUE", "delete KEY" or "get KEY"`)
}

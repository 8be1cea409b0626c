package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// runClusterTokenList is `parley cluster token list`.
func runClusterTokenList(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "[flags]", `
List the cluster's join tokens that can still be used (admin only): id, name,
when made and when they expire. Secrets are never shown again.`)
	addClientFlags(fs, &co)
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	var ts []client.JoinToken
	err := callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		ts, err = c.JoinTokens(ctx)
		return err
	})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tCREATED\tEXPIRES")
	for _, t := range ts {
		exp := "when revoked"
		if t.ExpiresAt != nil {
			exp = t.ExpiresAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, termSafe(t.Name), t.CreatedAt.Local().Format(time.DateTime), exp)
	}
	return tw.Flush()
}

// runClusterTokenCreate is `parley cluster token create`.
func runClusterTokenCreate(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var name string
	var ttl time.Duration
	fs := newFlagSet(path, "[flags]", `
Make a join token (admin only) and print it: the only time its secret is
shown. A new node joins with --join ADDR --join-token TOKEN.`)
	addClientFlags(fs, &co)
	fs.StringVar(&name, "name", "", "`words` saying what the token is for, shown in listings")
	fs.DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token works (0: until revoked)")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	if ttl < 0 {
		return usagef(path, "--ttl must not be negative")
	}
	var t client.JoinToken
	err := callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		t, err = c.CreateJoinToken(ctx, name, ttl)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, t.Token)
	return nil
}

// runClusterTokenRevoke is `parley cluster token revoke ID`.
func runClusterTokenRevoke(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "ID [flags]", `
Revoke a join token (admin only): no node can join with it any more. Nodes
that joined with it stay members.`)
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) error {
		return c.RevokeJoinToken(ctx, pos[0])
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "revoked join token %s\n", pos[0])
	return nil
}

// runClusterTokenRotate is `parley cluster token rotate`.
func runClusterTokenRotate(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "[flags]", `
Rotate the cluster's secrets (admin only): make a new join token (printed),
revoke every other one, and put a new gossip key in use on every node (the
previous key stays accepted until the next rotation).`)
	addClientFlags(fs, &co)
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	var t client.JoinToken
	err := callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		t, err = c.RotateJoinTokens(ctx)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, t.Token)
	return nil
}

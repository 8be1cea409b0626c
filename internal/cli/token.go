package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// runTokenCreate is `parley token create`.
func runTokenCreate(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var name, scope, expires string
	var rooms, queues repeated
	var asJSON bool
	fs := newFlagSet(path, "--name NAME [flags]", `
Make a personal API token for scripts and bots and print it: it is shown
this once, so store it now. Use it as --token or $PARLEY_TOKEN with any
client command, or as "Authorization: Bearer TOKEN" in HTTP requests.

--scope read allows reading only (GET requests and streams), write
everything a signed-in user may do but the admin routes, admin (only for
admins) the admin routes too. With --room or --queue (each may be given
many times) the token acts on those rooms and queues only. The token ends
at --expires (default 90 days, at most 365 days) or when revoked with
parley token revoke, on every node within a second.

Tokens are made, listed and revoked from a login session (parley user
login), never with a token.`)
	addClientFlags(fs, &co)
	fs.StringVar(&name, "name", "", "a `name` saying what the token is for (required)")
	fs.Var(newChoiceValue(&scope, "read", "read", "write", "admin"), "scope", "what the token may do: `read`, write or admin")
	fs.Var(&rooms, "room", "narrow the token to this `room` (repeatable)")
	fs.Var(&queues, "queue", "narrow the token to this `queue` (repeatable)")
	fs.StringVar(&expires, "expires", "", "the token's `lifetime`: 90m, 36h, 30d (default 90d, at most 365d)")
	fs.BoolVar(&asJSON, "json", false, "print the token and its details as JSON")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	if name == "" {
		return usagef(path, "--name is required: say what the token is for")
	}
	var ttl time.Duration
	if expires != "" {
		var err error
		if ttl, err = parseLifetime(expires); err != nil {
			return usagef(path, "%v", err)
		}
	}
	scopes := []string{scope}
	if len(rooms)+len(queues) > 0 {
		scopes = scopes[:0]
		for _, r := range rooms {
			scopes = append(scopes, scope+":room/"+r)
		}
		for _, q := range queues {
			scopes = append(scopes, scope+":queue/"+q)
		}
	}
	var t client.APIToken
	// Not a write with an idempotency key: the secret is never stored, so
	// only refusals made before anything was written are retried.
	err := callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		t, err = c.CreateAPIToken(ctx, name, scopes, ttl)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e.Stdout, t)
	}
	fmt.Fprintln(e.Stdout, t.Token)
	fmt.Fprintf(e.Stderr, "token %s (%s) expires %s; it is shown only now: store it\n",
		t.ID, termSafe(strings.Join(t.Scopes, " ")), formatMs(t.ExpiresAt))
	return nil
}

// parseLifetime reads a token lifetime: a Go duration or a number of days
// ("30d").
func parseLifetime(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 && n <= 100000 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("--expires %q is not a lifetime (90m, 36h, 30d)", s)
}

// runTokenList is `parley token list`.
func runTokenList(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var user string
	var asJSON bool
	fs := newFlagSet(path, "[flags]", `
List your personal API tokens, oldest first: id, name, scopes, when each
was made, when it expires and when it was last used (recorded up to a
minute late). Secrets are never shown again. Admins may list another
user's with --user.`)
	addClientFlags(fs, &co)
	fs.StringVar(&user, "user", "", "list this `user`'s tokens (admins only)")
	fs.BoolVar(&asJSON, "json", false, "print the tokens as JSON")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	var ts []client.APIToken
	err := callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		ts, err = c.APITokens(ctx, user)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSONList(e.Stdout, ts)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tCREATED\tEXPIRES\tLAST USED")
	for _, t := range ts {
		used := "never"
		if t.LastUsedAt != nil {
			used = formatMs(*t.LastUsedAt)
		}
		exp := formatMs(t.ExpiresAt)
		if t.Expired {
			exp += " (expired)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, termSafe(t.Name), termSafe(strings.Join(t.Scopes, " ")), formatMs(t.CreatedAt), exp, used)
	}
	return tw.Flush()
}

// runTokenRevoke is `parley token revoke ID`.
func runTokenRevoke(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var user string
	fs := newFlagSet(path, "ID [flags]", `
Revoke a personal API token by the id parley token list shows: it stops
working on every node within a second, and the streams it holds end.
Admins may revoke another user's with --user.`)
	addClientFlags(fs, &co)
	fs.StringVar(&user, "user", "", "revoke a token of this `user` (admins only)")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) error {
		return c.RevokeAPIToken(ctx, user, pos[0])
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "revoked token %s\n", termSafe(pos[0]))
	return nil
}

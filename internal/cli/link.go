package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// runLinkCreate is `parley link create URL`.
func runLinkCreate(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var opts client.LinkOptions
	var lf linkFlags
	var asJSON bool
	fs := newFlagSet(path, "URL [flags]", `
Shorten an http(s) URL and print the short link. It works at once, on every
node: GET /s/CODE redirects to URL, and GET /s/CODE+ shows where it goes.`)
	addClientFlags(fs, &co)
	fs.StringVar(&opts.Code, "code", "", "the short `code` wanted (1-64 of A-Z a-z 0-9 _ -; default: one is picked)")
	lf.add(fs, false)
	fs.BoolVar(&asJSON, "json", false, "print the link as JSON")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	if lf.expires != "" {
		if opts.ExpiresAt, err = parseExpiry(lf.expires, time.Now(), false); err != nil {
			return usagef(path, "%v", err)
		}
	}
	opts.MaxVisits, opts.RedirectStatus, opts.Tags = lf.maxVisits, lf.status, splitTags(lf.tags)
	var l client.Link
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		l, err = c.CreateLink(ctx, pos[0], opts)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e.Stdout, l)
	}
	fmt.Fprintln(e.Stdout, termSafe(l.ShortURL))
	return nil
}

// runLinkInfo is `parley link info CODE`.
func runLinkInfo(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var asJSON bool
	fs := newFlagSet(path, "CODE [flags]", "Show a short link: its URL, creator, creation time and redirects so far (counted a few seconds late).")
	addClientFlags(fs, &co)
	fs.BoolVar(&asJSON, "json", false, "print the link as JSON")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var l client.Link
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		l, err = c.LinkInfo(ctx, pos[0])
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e.Stdout, l)
	}
	return printLink(e.Stdout, l)
}

// runLinkList is `parley link list`.
func runLinkList(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var f client.LinkFilter
	var asJSON bool
	fs := newFlagSet(path, "[flags]", "List your short links, newest first, with their redirects so far.")
	addClientFlags(fs, &co)
	fs.StringVar(&f.Tag, "tag", "", "only links with this `tag`")
	fs.StringVar(&f.Query, "q", "", "only links whose code or URL contains this `text`")
	fs.StringVar(&f.State, "state", "", "only links in this `state`: active, disabled, expired or exhausted")
	fs.BoolVar(&asJSON, "json", false, "print the links as JSON")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	var ls []client.Link
	err := callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		ls, err = c.ListLinks(ctx, f)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSONList(e.Stdout, ls)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tHITS\tCREATED\tURL\tSTATE\tTAGS")
	for _, l := range ls {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", termSafe(l.Code), l.Hits, formatMs(l.CreatedAt), termSafe(l.URL), l.State, termSafe(strings.Join(l.Tags, ",")))
	}
	return tw.Flush()
}

// runLinkDelete is `parley link delete CODE`.
func runLinkDelete(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "CODE [flags]", "Delete a short link (its creator or an admin may); redirects stop within 5 seconds on every node.")
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) error {
		return c.DeleteLink(ctx, pos[0])
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "deleted link %s\n", termSafe(pos[0]))
	return nil
}

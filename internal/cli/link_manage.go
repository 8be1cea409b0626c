package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// parseExpiry reads an --expires value: a duration from now ("90m", "36h",
// "7d"), an RFC 3339 time, or, where clear is allowed, "never" (0).
func parseExpiry(s string, now time.Time, clear bool) (int64, error) {
	if clear && (s == "never" || s == "0") {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return now.Add(time.Duration(n) * 24 * time.Hour).UnixMilli(), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(d).UnixMilli(), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UnixMilli(), nil
	}
	never := ""
	if clear {
		never = `, or "never"`
	}
	return 0, fmt.Errorf("--expires %q is not a duration (90m, 36h, 7d) or an RFC 3339 time%s", s, never)
}

// splitTags reads a --tags value: tags separated by commas.
func splitTags(s string) []string {
	var out []string
	for t := range strings.SplitSeq(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// linkFlags are the lifecycle flags of link create and link edit.
type linkFlags struct {
	expires, tags string
	maxVisits     uint64
	status        int
	url           string
}

func (lf *linkFlags) add(fs *flagSet, edit bool) {
	never := ""
	if edit {
		never = `, or "never"`
		fs.StringVar(&lf.url, "url", "", "the new long `URL`")
	}
	fs.StringVar(&lf.expires, "expires", "", "stop redirecting after a `duration` (90m, 36h, 7d) or at an RFC 3339 time"+never)
	fs.Uint64Var(&lf.maxVisits, "max-visits", 0, "stop redirecting after `N` visits (approximate across nodes; 0: no limit)")
	fs.IntVar(&lf.status, "status", 0, "the redirect `status`: 301, 302, 307 or 308 (default 302)")
	fs.StringVar(&lf.tags, "tags", "", "comma-separated `tags` (replacing the link's tags when editing)")
}

// runLinkEdit is `parley link edit CODE`.
func runLinkEdit(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var lf linkFlags
	var asJSON bool
	fs := newFlagSet(path, "CODE [flags]", `
Change a link you created: its URL, expiry, visit limit, redirect status or
tags. Only the flags given change; the change is seen at once on the node
asked and within 2 seconds on every other.`)
	addClientFlags(fs, &co)
	lf.add(fs, true)
	fs.BoolVar(&asJSON, "json", false, "print the link as JSON")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var u client.LinkUpdate
	var perr error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "url":
			u.URL = &lf.url
		case "expires":
			var ms int64
			if ms, perr = parseExpiry(lf.expires, time.Now(), true); perr == nil {
				u.ExpiresAt = &ms
			}
		case "max-visits":
			u.MaxVisits = &lf.maxVisits
		case "status":
			u.RedirectStatus = &lf.status
		case "tags":
			tags := splitTags(lf.tags)
			if tags == nil {
				tags = []string{}
			}
			u.Tags = &tags
		}
	})
	if perr != nil {
		return usagef(path, "%v", perr)
	}
	return editLink(ctx, e, &co, pos[0], u, asJSON)
}

// editLink sends u and prints the link as stored.
func editLink(ctx context.Context, e *Env, co *clientOptions, code string, u client.LinkUpdate, asJSON bool) error {
	var l client.Link
	err := callServer(ctx, co, true, func(ctx context.Context, c *client.Client) (err error) {
		l, err = c.UpdateLink(ctx, code, u)
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

// runLinkSwitch is `parley link disable CODE` and `parley link enable
// CODE`.
func runLinkSwitch(disable bool) func(ctx context.Context, e *Env, path string, args []string) error {
	return func(ctx context.Context, e *Env, path string, args []string) error {
		var co clientOptions
		what := "Enable a link you disabled: it redirects again."
		if disable {
			what = "Disable a link you created: it answers 410 Gone until enabled, within 2 seconds on every node."
		}
		fs := newFlagSet(path, "CODE [flags]", what)
		addClientFlags(fs, &co)
		pos, err := parseClient(fs, &co, e, args, 1, 1)
		if err != nil {
			return err
		}
		err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) error {
			_, err := c.SetLinkDisabled(ctx, pos[0], disable)
			return err
		})
		if err != nil {
			return err
		}
		verb := "enabled"
		if disable {
			verb = "disabled"
		}
		fmt.Fprintf(e.Stdout, "%s link %s\n", verb, termSafe(pos[0]))
		return nil
	}
}

// runLinkStats is `parley link stats CODE`.
func runLinkStats(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var days int
	var asJSON bool
	fs := newFlagSet(path, "CODE [flags]", `
Show a link's visits: per day, by referrer host, browser and OS, with bots
counted apart. Counts are aggregated (no visitor is stored) and lag the
redirects by a few seconds. For the link's creator or an admin.`)
	addClientFlags(fs, &co)
	fs.IntVar(&days, "days", 30, "the `days` of daily visits to show (1-366)")
	fs.BoolVar(&asJSON, "json", false, "print the stats as JSON")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var st client.LinkStats
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		st, err = c.LinkStats(ctx, pos[0], days)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e.Stdout, st)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "visits:\t%d (%d bots, %d direct)\n", st.Visits, st.Bots, st.Direct)
	fmt.Fprintln(tw, "\nDAY\tVISITS\tBOTS")
	for _, d := range st.Days {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", d.Date, d.Visits, d.Bots)
	}
	for _, sec := range []struct {
		title string
		list  []client.NameCount
	}{{"REFERRER", st.Referrers}, {"BROWSER", st.Browsers}, {"OS", st.OS}} {
		fmt.Fprintf(tw, "\n%s\tVISITS\n", sec.title)
		for _, c := range sec.list {
			fmt.Fprintf(tw, "%s\t%d\n", termSafe(c.Name), c.Visits)
		}
	}
	return tw.Flush()
}

// runLinkQR is `parley link qr CODE`.
func runLinkQR(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var format, out string
	var scale int
	fs := newFlagSet(path, "CODE --out FILE [flags]", "Write a QR code of a link's short URL, as PNG or SVG.")
	addClientFlags(fs, &co)
	fs.StringVar(&format, "format", "png", "the image `format`: png or svg")
	fs.IntVar(&scale, "scale", 0, "`pixels` per module, 1-32 (default 8)")
	fs.StringVar(&out, "out", "", "the `file` to write (- for standard output)")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	if out == "" {
		return usagef(path, "--out is required (- for standard output)")
	}
	var img []byte
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		img, err = c.LinkQR(ctx, pos[0], format, scale)
		return err
	})
	if err != nil {
		return err
	}
	if out == "-" {
		_, err = e.Stdout.Write(img)
		return err
	}
	if err := os.WriteFile(out, img, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Fprintf(e.Stdout, "wrote %s (%d bytes)\n", termSafe(out), len(img))
	return nil
}

// runLinkImport is `parley link import FILE`.
func runLinkImport(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var asJSON bool
	fs := newFlagSet(path, "FILE [flags]", `
Create links from a CSV file (- for standard input): one link per line,
url first, then optionally code, tags (separated by ; or spaces),
expires_at (RFC 3339 or Unix ms), max_visits, redirect_status; or a
header row naming those columns in any order. At most 1000 links. Prints
what became of each line; a retry after a failure creates nothing twice.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	data, err := readInput(e, pos[0])
	if err != nil {
		return err
	}
	var rep client.ImportReport
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		rep, err = c.ImportLinks(ctx, strings.NewReader(string(data)))
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e.Stdout, rep)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LINE\tRESULT")
	for _, l := range rep.Lines {
		if l.Error != nil {
			fmt.Fprintf(tw, "%d\t%s: %s\n", l.Line, l.Error.Code, termSafe(l.Error.Message))
		} else {
			fmt.Fprintf(tw, "%d\t%s -> %s\n", l.Line, termSafe(l.ShortURL), termSafe(l.URL))
		}
	}
	fmt.Fprintf(tw, "\n%d created, %d failed\n", rep.Created, rep.Failed)
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Failed > 0 {
		return fmt.Errorf("%d of %d lines failed", rep.Failed, len(rep.Lines))
	}
	return nil
}

// readInput reads a file, or standard input for "-", at most 1 MiB and a
// byte (so the server names its limit).
func readInput(e *Env, name string) ([]byte, error) {
	var r io.Reader = e.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	return io.ReadAll(io.LimitReader(r, 1<<20+1))
}

// printLink prints a link as link info does.
func printLink(w io.Writer, l client.Link) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "code:\t%s\n", termSafe(l.Code))
	fmt.Fprintf(tw, "url:\t%s\n", termSafe(l.URL))
	if l.ShortURL != "" {
		fmt.Fprintf(tw, "short url:\t%s\n", termSafe(l.ShortURL))
	}
	fmt.Fprintf(tw, "state:\t%s\n", l.State)
	fmt.Fprintf(tw, "created by:\t%s\n", termSafe(l.CreatedBy))
	fmt.Fprintf(tw, "created at:\t%s\n", formatMs(l.CreatedAt))
	fmt.Fprintf(tw, "hits:\t%d\n", l.Hits)
	if l.ExpiresAt != 0 {
		fmt.Fprintf(tw, "expires at:\t%s\n", formatMs(l.ExpiresAt))
	}
	if l.MaxVisits != 0 {
		fmt.Fprintf(tw, "max visits:\t%d\n", l.MaxVisits)
	}
	fmt.Fprintf(tw, "redirect:\t%d\n", l.RedirectStatus)
	if len(l.Tags) > 0 {
		fmt.Fprintf(tw, "tags:\t%s\n", termSafe(strings.Join(l.Tags, ", ")))
	}
	return tw.Flush()
}

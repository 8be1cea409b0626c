package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parley-chat/parley/client"
)

// runSearch is `parley search`.
func runSearch(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var q client.SearchQuery
	var before, after string
	fs := newFlagSet(path, "[flags] QUERY...", `
Search the messages you may read (public rooms, your private rooms, your
whispers), best first. Every word must occur; "quoted phrases" in order;
from:USER and in:ROOM filter (docs/API.md, "Search"). Each result is
printed as ROOM #SEQ TIME SENDER: TEXT.`)
	addClientFlags(fs, &co)
	fs.StringVar(&q.Room, "room", "", "only this `room`")
	fs.StringVar(&q.From, "from", "", "only messages of this `user`")
	fs.StringVar(&before, "before", "", "only messages sent before this `time` (RFC 3339)")
	fs.StringVar(&after, "after", "", "only messages sent after this `time` (RFC 3339)")
	fs.IntVar(&q.Limit, "limit", 0, "at most `n` results, up to 100 (0: the server's default, 20)")
	rest, err := parseClient(fs, &co, e, args, 1, 64)
	if err != nil {
		return err
	}
	q.Q = strings.Join(rest, " ")
	for _, t := range []struct {
		name, v string
		dst     *time.Time
	}{{"before", before, &q.Before}, {"after", after, &q.After}} {
		if t.v == "" {
			continue
		}
		if *t.dst, err = time.Parse(time.RFC3339, t.v); err != nil {
			return usagef(fs.path, "--%s must be an RFC 3339 time, like 2026-11-26T09:00:00Z", t.name)
		}
	}
	var res []client.SearchResult
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		res, err = c.Search(ctx, q)
		return err
	})
	if err != nil {
		return err
	}
	for _, r := range res {
		ev := r.Message
		fmt.Fprintf(e.Stdout, "%s #%d %s %s: %s\n", termSafe(r.Room), r.Seq, clock(ev.Ts), termSafe(ev.Sender), termSafe(ev.Text))
	}
	if len(res) == 0 {
		fmt.Fprintln(e.Stdout, "no messages found")
	}
	return nil
}

package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// runAudit is `parley audit`.
func runAudit(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var q client.AuditQuery
	var since string
	var asJSON bool
	fs := newFlagSet(path, "[flags]", `
Print the security audit log of every node (admin only), oldest first:
logins and logouts, admin-only calls, the first admin's registration and
users created by admins, refused internal calls, joins, node removals and
revocations. Text a client chose (a user name typed at a failed login) is
printed with control characters escaped. A node that does not answer is
named on standard error: its events are missing.`)
	addClientFlags(fs, &co)
	fs.StringVar(&q.Kind, "kind", "", "only events of this `kind` (login, session_revoked, admin_action, user_created, ...)")
	fs.StringVar(&q.Actor, "actor", "", "only events of this `name`: a user name or node id (ignoring case)")
	fs.StringVar(&since, "since", "", "only events of the last `duration` (30m, 24h) or since an RFC 3339 time")
	fs.IntVar(&q.Limit, "limit", 100, "print the newest `N` events (1 to 1000)")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON, as GET /api/v1/audit returns it")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	if q.Limit < 1 || q.Limit > 1000 {
		return usagef(path, "--limit %d: must be 1 to 1000", q.Limit)
	}
	if since != "" {
		t, err := parseSince(since, time.Now())
		if err != nil {
			return usagef(path, "--since: %v", err)
		}
		q.Since = t
	}
	var rep *client.AuditReport
	err := callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		rep, err = c.Audit(ctx, q)
		return err
	})
	if err != nil {
		return err
	}
	if len(rep.Unreachable) > 0 {
		fmt.Fprintf(e.Stderr, "warning: %s did not answer; their events are missing\n", termSafe(strings.Join(rep.Unreachable, ", ")))
	}
	if asJSON {
		var b bytes.Buffer
		if err := printJSON(&b, rep); err != nil {
			return err
		}
		_, err := e.Stdout.Write(jsonTermSafe(b.Bytes()))
		return err
	}
	return writeAudit(e.Stdout, rep.Events)
}

// parseSince reads --since: a positive duration back from now, or an RFC
// 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("%q: a duration must be positive", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (1h, 30m) nor an RFC 3339 time", s)
	}
	return t, nil
}

// writeAudit prints events as a table, every text field made safe for a
// terminal.
func writeAudit(w io.Writer, evs []client.AuditEvent) error {
	if len(evs) == 0 {
		_, err := fmt.Fprintln(w, "no audit events")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tNODE\tKIND\tOUTCOME\tACTOR\tREMOTE\tTARGET\tDETAIL")
	for _, ev := range evs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ev.Time.Local().Format("2006-01-02 15:04:05"),
			safeDash(ev.Node), safeDash(ev.Kind), safeDash(ev.Outcome), safeDash(ev.Actor),
			safeDash(ev.Remote), safeDash(ev.Target), safeDash(ev.Detail))
	}
	return tw.Flush()
}

// safeDash is termSafe, with "-" for an empty field.
func safeDash(s string) string { return dash(termSafe(s)) }

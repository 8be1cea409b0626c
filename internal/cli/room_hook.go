package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// runRoomExport is `parley room export ROOM [--out FILE]`.
func runRoomExport(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var out string
	fs := newFlagSet(path, "ROOM [flags]", `
Download a room's whole history as JSON Lines: one event per line, in seq
order, as GET /api/v1/rooms/ROOM/export streams it (the room's owner or an
admin may). Whispers you are not part of are hidden events, as in the
history. With --out the lines go to FILE (written as FILE.partial and
renamed once complete); without it to standard output, with the characters
a terminal would act on escaped.`)
	addClientFlags(fs, &co)
	fs.StringVar(&out, "out", "", "write the export to this `file` instead of standard output")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var w io.Writer = jsonLinesOut{e.Stdout}
	var f *os.File
	if out != "" {
		if f, err = os.OpenFile(out+".partial", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			return fmt.Errorf("create %s.partial: %w", out, err)
		}
		w = f
	}
	var n int
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		n, err = c.ExportRoom(ctx, pos[0], w)
		return err
	})
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(out+".partial", out)
		}
		if err != nil {
			_ = os.Remove(out + ".partial")
			return err
		}
		fmt.Fprintf(e.Stdout, "exported %s of room %s to %s\n", plural(n, "event"), termSafe(pos[0]), out)
	}
	return err
}

// jsonLinesOut escapes, in each line of JSON written through it, the
// characters a terminal would act on (jsonTermSafe).
type jsonLinesOut struct{ w io.Writer }

func (t jsonLinesOut) Write(p []byte) (int, error) {
	if _, err := t.w.Write(jsonTermSafe(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// runRoomHookCreate is `parley room hook create ROOM NAME`.
func runRoomHookCreate(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "ROOM NAME [flags]", `
Create an incoming webhook: a URL that posts to ROOM as the bot NAME, for
scripts and services (the room's owner or an admin may). POST {"text":"..."}
to it, or Slack's {"text":"...","username":"..."}; it needs no token, so
keep it secret. The URL is shown this once: the cluster keeps only a digest
of its secret. Bots' messages show their sender as "hook:NAME", which no
user can be called.`)
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	var h client.Hook
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		h, err = c.CreateHook(ctx, pos[0], pos[1])
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "created hook %s in room %s, posting as %s\n%s\n", h.ID, termSafe(h.Room), termSafe(h.Name), termSafe(h.URL))
	fmt.Fprintln(e.Stderr, "The URL is shown only this once; anyone who has it can post to the room.")
	return nil
}

// runRoomHookList is `parley room hook list ROOM`.
func runRoomHookList(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var asJSON bool
	fs := newFlagSet(path, "ROOM [flags]", "List a room's incoming webhooks, without their secrets (the room's owner or an admin may).")
	addClientFlags(fs, &co)
	fs.BoolVar(&asJSON, "json", false, "print the hooks as JSON, as GET /api/v1/rooms/ROOM/hooks returns them")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var hooks []client.Hook
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		hooks, err = c.Hooks(ctx, pos[0])
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSONList(e.Stdout, hooks)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tBOT\tCREATOR\tCREATED")
	for _, h := range hooks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.ID, termSafe(h.Name), termSafe(h.Creator), time.UnixMilli(h.CreatedAt).Format(time.DateTime))
	}
	return tw.Flush()
}

// runRoomHookRevoke is `parley room hook revoke ROOM ID`.
func runRoomHookRevoke(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "ROOM ID [flags]", "Revoke an incoming webhook by the id parley room hook list shows: its URL stops working at once.")
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) error {
		return c.RevokeHook(ctx, pos[0], pos[1])
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "revoked hook %s of room %s\n", termSafe(pos[1]), termSafe(pos[0]))
	return nil
}

// senderText renders an event's sender for people: a bot (an incoming
// webhook's post, client.IsBot) as "NAME [bot]", so it cannot pass for the
// user of that name.
func senderText(sender string) string {
	if client.IsBot(sender) {
		return termSafe(sender[len(client.BotPrefix):]) + " [bot]"
	}
	return termSafe(sender)
}

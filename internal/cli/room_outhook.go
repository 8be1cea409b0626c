package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// runRoomOutHookCreate is `parley room outgoing-hook create ROOM NAME URL`.
func runRoomOutHookCreate(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var triggers []string
	fs := newFlagSet(path, "ROOM NAME URL [flags]", `
Create an outgoing webhook: every message of ROOM, or with --trigger only
those whose first word is a trigger word, is POSTed as JSON to URL (http or
https), signed with the secret printed here, which is shown this once (the
room's owner or an admin may). Deliveries are retried with backoff until
the receiver answers 2xx, at least once each: drop repeats by the
X-Parley-Delivery header. A URL at a private, loopback or link-local
address is refused unless the server allows its range
(--webhook-allow-cidr). docs/API.md says how to verify the signature.`)
	addClientFlags(fs, &co)
	fs.Var(newListValue(&triggers, nil), "trigger", "trigger `words`, comma separated, repeatable (default: every message)")
	pos, err := parseClient(fs, &co, e, args, 3, 3)
	if err != nil {
		return err
	}
	var h client.OutgoingHook
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		h, err = c.CreateOutgoingHook(ctx, pos[0], client.OutgoingHookSpec{Name: pos[1], URL: pos[2], TriggerWords: triggers})
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "created outgoing hook %s in room %s to %s\nsecret: %s\n", h.ID, termSafe(h.Room), termSafe(h.URL), termSafe(h.Secret))
	fmt.Fprintln(e.Stderr, "The secret is shown only this once; the receiver needs it to verify signatures.")
	return nil
}

// runRoomOutHookList is `parley room outgoing-hook list ROOM`.
func runRoomOutHookList(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var asJSON bool
	fs := newFlagSet(path, "ROOM [flags]", "List a room's outgoing webhooks, without their secrets (the room's owner or an admin may).")
	addClientFlags(fs, &co)
	fs.BoolVar(&asJSON, "json", false, "print the hooks as JSON, as GET /api/v1/rooms/ROOM/outgoing-hooks returns them")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var hooks []client.OutgoingHook
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		hooks, err = c.OutgoingHooks(ctx, pos[0])
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSONList(e.Stdout, hooks)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tTRIGGERS\tURL\tCREATOR\tCREATED")
	for _, h := range hooks {
		triggers := "(every message)"
		if len(h.TriggerWords) > 0 {
			triggers = strings.Join(h.TriggerWords, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.ID, termSafe(h.Name), termSafe(triggers), termSafe(h.URL), termSafe(h.Creator), time.UnixMilli(h.CreatedAt).Format(time.DateTime))
	}
	return tw.Flush()
}

// runRoomOutHookDelete is `parley room outgoing-hook delete ROOM ID`.
func runRoomOutHookDelete(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "ROOM ID [flags]", "Delete an outgoing webhook by the id parley room outgoing-hook list shows, with its delivery log: nothing more is delivered to it.")
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) error {
		return c.DeleteOutgoingHook(ctx, pos[0], pos[1])
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "deleted outgoing hook %s of room %s\n", termSafe(pos[1]), termSafe(pos[0]))
	return nil
}

// runRoomOutHookDeliveries is `parley room outgoing-hook deliveries ROOM ID`.
func runRoomOutHookDeliveries(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var asJSON bool
	fs := newFlagSet(path, "ROOM ID [flags]", `
Show an outgoing webhook's delivery log, newest first: its last 50
attempts, each with the message's seq, the attempt's number, the
receiver's status or what went wrong, and the outcome (retry, delivered,
gave_up after 10 attempts, dropped when the message was deleted first).`)
	addClientFlags(fs, &co)
	fs.BoolVar(&asJSON, "json", false, "print the attempts as JSON, as GET /api/v1/rooms/ROOM/outgoing-hooks/ID/deliveries returns them")
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	var log []client.Delivery
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		log, err = c.OutgoingHookDeliveries(ctx, pos[0], pos[1])
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSONList(e.Stdout, log)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSEQ\tATTEMPT\tOUTCOME\tSTATUS\tERROR")
	for _, d := range log {
		status := "-"
		if d.Status != 0 {
			status = fmt.Sprint(d.Status)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", time.UnixMilli(d.Ts).Format(time.DateTime), d.Seq, d.Attempt, termSafe(d.Outcome), status, termSafe(d.Error))
	}
	return tw.Flush()
}

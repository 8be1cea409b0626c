package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/parley-chat/parley/client"
)

// retentionFlags are the retention flags of `parley room settings`.
type retentionFlags struct {
	days, messages int64
}

// add registers --retention-days and --retention-messages on fs.
func (r *retentionFlags) add(fs *flagSet) {
	fs.Int64Var(&r.days, "retention-days", 0, "keep the room's events this many `days` (0: the cluster's --history-retention, -1: for ever, overriding it); owner or admin")
	fs.Int64Var(&r.messages, "retention-messages", 0, "keep only the newest `n` messages of the room (0 or -1: no limit); owner or admin")
}

// apply sets in s the retention flags given (set names them).
func (r *retentionFlags) apply(path string, set map[string]bool, s *client.RoomSettings) error {
	if set["retention-days"] {
		if r.days < -1 {
			return usagef(path, "--retention-days %d: want -1 (for ever), 0 (the cluster default) or a number of days", r.days)
		}
		s.RetentionDays = &r.days
	}
	if set["retention-messages"] {
		if r.messages < -1 {
			return usagef(path, "--retention-messages %d: want -1 or 0 (no limit) or a number of messages", r.messages)
		}
		s.RetentionMessages = &r.messages
	}
	return nil
}

// printRetention prints a room's retention and legal hold as lines of
// printRoomSettings' table.
func printRetention(w io.Writer, r client.Room) {
	age := "the cluster default"
	switch {
	case r.RetentionDays < 0:
		age = "for ever"
	case r.RetentionDays == 1:
		age = "1 day"
	case r.RetentionDays > 1:
		age = strconv.FormatInt(r.RetentionDays, 10) + " days"
	}
	count := "no limit"
	if r.RetentionMessages > 0 {
		count = "the newest " + strconv.FormatInt(r.RetentionMessages, 10)
	}
	fmt.Fprintf(w, "keep events\t%s\n", age)
	fmt.Fprintf(w, "keep messages\t%s\n", count)
	fmt.Fprintf(w, "legal hold\t%s\n", yesNo(r.LegalHold))
}

// runRoomLegalHold is `parley room legal-hold ROOM on|off`.
func runRoomLegalHold(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "ROOM on|off [flags]", `
Place a room under legal hold (on) or lift it (off); admins only. While a
room is held nothing of its history is deleted: neither the cluster's nor
the room's retention removes events, its messages cannot be edited or
deleted, and the room cannot be deleted.`)
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	var lift bool
	switch pos[1] {
	case "on":
	case "off":
		lift = true
	default:
		return usagef(path, "%q: want on or off", termSafe(pos[1]))
	}
	var r client.Room
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		r, err = c.SetLegalHold(ctx, pos[0], lift)
		return err
	})
	if err != nil {
		return err
	}
	state := "no longer under legal hold"
	if r.LegalHold {
		state = "under legal hold"
	}
	fmt.Fprintf(e.Stdout, "room %s is %s\n", termSafe(r.Name), state)
	return nil
}

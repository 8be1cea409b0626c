package chat

import (
	"strings"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/text"
)

// MaxRoomName is the longest room name in bytes of [A-Za-z0-9_.-], from the
// product contract. Usernames are bounded by ident.MaxUsername.
const MaxRoomName = 64

// CanonicalRoom returns the canonical spelling of a room name: its ASCII
// lower case. Room names are case-insensitive ("General" and "general" are one
// room, as channel handles are in Slack and Mattermost): the Service folds
// every name it is given, routes and stores the folded name and returns it in
// every answer. A name that is not 1–64 bytes of [A-Za-z0-9_.-], or is "." or
// ".." (which no URL path can carry), is errs.Invalid.
func CanonicalRoom(name string) (string, error) {
	if !ident.ValidName(name, MaxRoomName) || name == "." || name == ".." {
		if err := text.Check(name, text.Line); err != nil {
			return "", errs.New(errs.Invalid, "room name: %v", err)
		}
		return "", errs.New(errs.Invalid, "room name %q is invalid: use 1 to %d of A-Z a-z 0-9 _ . -", clip(name), MaxRoomName)
	}
	return ident.Fold(name), nil
}

// isCanonicalRoom reports whether name is a valid room name already folded.
func isCanonicalRoom(name string) bool {
	c, err := CanonicalRoom(name)
	return err == nil && c == name
}

// checkMessage checks a message's characters against the shared rule for
// user-chosen text (internal/text: no control character but newline and
// tab, no bidirectional override or isolate) and refuses a message of
// white space only. The Service checks; Apply does not, so that commands
// logged before the rule apply alike everywhere.
func checkMessage(msg string) error {
	if err := text.Check(msg, text.Lines); err != nil {
		return errs.New(errs.Invalid, "text: %v", err)
	}
	if strings.TrimSpace(msg) == "" {
		return errs.New(errs.Invalid, "text is blank: it holds only white space")
	}
	return nil
}

// checkRecipient validates a whisper's recipient, naming the field "to".
func checkRecipient(u string) error {
	if ident.ValidUsername(u) {
		return nil
	}
	if err := text.Check(u, text.Line); err != nil {
		return errs.New(errs.Invalid, "to: %v", err)
	}
	return errs.New(errs.Invalid, "to: %q is not a valid username", clip(u))
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

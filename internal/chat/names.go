package chat

import (
	"strings"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/text"
)

// Name limits from the product contract.
const (
	MaxRoomName = 64 // bytes of [A-Za-z0-9_.-]
	MaxUsername = 32 // bytes of [A-Za-z0-9_.-]
)

// CanonicalRoom returns the canonical spelling of a room name: its ASCII
// lower case. Room names are case-insensitive ("General" and "general" are one
// room, as channel handles are in Slack and Mattermost): the Service folds
// every name it is given, routes and stores the folded name and returns it in
// every answer. A name that is not 1–64 bytes of [A-Za-z0-9_.-], or is "." or
// ".." (which no URL path can carry), is errs.Invalid.
func CanonicalRoom(name string) (string, error) {
	if !validName(name, MaxRoomName) || name == "." || name == ".." {
		if err := text.Check(name, text.Line); err != nil {
			return "", errs.New(errs.Invalid, "room name: %v", err)
		}
		return "", errs.New(errs.Invalid, "room name %q is invalid: use 1 to %d of A-Z a-z 0-9 _ . -", clip(name), MaxRoomName)
	}
	return lower(name), nil
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
	if validUsername(u) {
		return nil
	}
	if err := text.Check(u, text.Line); err != nil {
		return errs.New(errs.Invalid, "to: %v", err)
	}
	return errs.New(errs.Invalid, "to: %q is not a valid username", clip(u))
}

// validUsername reports whether u is a well-formed username.
func validUsername(u string) bool { return validName(u, MaxUsername) }

// validName reports whether s is 1..max bytes of [A-Za-z0-9_.-].
func validName(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// lower returns s in ASCII lower case, without allocating when it already is.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// sameUser reports whether two usernames name the same user. Usernames are
// case-insensitive (PRODUCT: "name taken (case-insensitive)").
func sameUser(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

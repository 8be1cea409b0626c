package chat

import (
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
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
		return "", errs.New(errs.Invalid, "room name %q is invalid: use 1 to %d of A-Z a-z 0-9 _ . -", clip(name), MaxRoomName)
	}
	return ident.Fold(name), nil
}

// isCanonicalRoom reports whether name is a valid room name already folded.
func isCanonicalRoom(name string) bool {
	c, err := CanonicalRoom(name)
	return err == nil && c == name
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

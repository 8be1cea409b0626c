package account

import (
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/text"
)

// CheckUsername validates a username: 1 to ident.MaxUsername bytes of
// [A-Za-z0-9_.-]. Errors are errs.Invalid and name the field "username"; a
// name holding a character the shared text rule refuses (internal/text) is
// told which.
func CheckUsername(name string) error {
	switch {
	case name == "":
		return errs.New(errs.Invalid, "username is empty")
	case len(name) > ident.MaxUsername:
		return errs.New(errs.Invalid, "username is %d bytes; the limit is %d", len(name), ident.MaxUsername)
	case !ident.ValidUsername(name):
		if err := text.Check(name, text.Line); err != nil {
			return errs.New(errs.Invalid, "username: %v", err)
		}
		return errs.New(errs.Invalid, "username may contain only letters, digits, '_', '.' and '-'")
	}
	return nil
}

// checkPassword validates a password's length in bytes. Errors are
// errs.Invalid and name the field "password".
func checkPassword(pw string, minLen, maxLen int) error {
	switch {
	case len(pw) < minLen:
		return errs.New(errs.Invalid, "password is %d bytes; the minimum is %d", len(pw), minLen)
	case len(pw) > maxLen:
		return errs.New(errs.Invalid, "password is %d bytes; the limit is %d", len(pw), maxLen)
	}
	return nil
}

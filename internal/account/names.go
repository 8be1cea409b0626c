package account

import (
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/text"
)

// asciiLower returns s with ASCII letters lowercased and every other byte
// unchanged. Apply uses it instead of strings.ToLower, whose Unicode tables
// may differ between Go releases and so between replicas.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// nameByte reports whether c may appear in a username: [A-Za-z0-9_.-].
func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// CheckUsername validates a username: 1 to maxLen bytes of [A-Za-z0-9_.-].
// Errors are errs.Invalid and name the field "username"; a name holding a
// character the shared text rule refuses (internal/text) is told which.
func CheckUsername(name string, maxLen int) error {
	switch {
	case name == "":
		return errs.New(errs.Invalid, "username is empty")
	case len(name) > maxLen:
		return errs.New(errs.Invalid, "username is %d bytes; the limit is %d", len(name), maxLen)
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			if err := text.Check(name, text.Line); err != nil {
				return errs.New(errs.Invalid, "username: %v", err)
			}
			return errs.New(errs.Invalid, "username may contain only letters, digits, '_', '.' and '-'")
		}
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

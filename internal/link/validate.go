package link

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net/url"
	"unicode/utf8"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/text"
)

// Limits of codes.
const (
	MaxCode       = 64 // bytes of a custom code
	GeneratedCode = 7  // characters of a generated code
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// space62 is 62^GeneratedCode, the number of generated codes.
const space62 = 62 * 62 * 62 * 62 * 62 * 62 * 62

// CheckURL validates a long URL: at most maxLen bytes (errs.TooLarge),
// otherwise an absolute http or https URL (any case) with a host, no user
// name or password, and no spaces, control characters (C0, DEL and C1; the
// error names the character), bidirectional overrides or isolates
// (internal/text) or backslashes, which browsers would read differently
// from us (errs.Invalid). Every error names the field "url".
func CheckURL(raw string, maxLen int) error {
	switch {
	case raw == "":
		return errs.New(errs.Invalid, "url is empty")
	case len(raw) > maxLen:
		return errs.New(errs.TooLarge, "url is %d bytes; the limit is %d", len(raw), maxLen)
	case !utf8.ValidString(raw):
		return errs.New(errs.Invalid, "url is not valid UTF-8")
	}
	if err := text.Check(raw, text.Line); err != nil {
		return errs.New(errs.Invalid, "url: %v", err)
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return errs.New(errs.Invalid, "url must not contain spaces, control characters or backslashes")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errs.New(errs.Invalid, "url is not a valid URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https": // Parse lowercases the scheme
		return errs.New(errs.Invalid, "url must be an absolute http or https URL")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return errs.New(errs.Invalid, "url must have a host, as in https://example.com/page")
	case u.User != nil:
		return errs.New(errs.Invalid, "url must not contain a user name or password")
	}
	return nil
}

// codeByte reports whether c may appear in a code: [A-Za-z0-9_-].
func codeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// CheckCode validates a custom code: 1 to MaxCode bytes of [A-Za-z0-9_-].
// Errors are errs.Invalid and name the field "code".
func CheckCode(code string) error {
	if code == "" || len(code) > MaxCode {
		return errs.New(errs.Invalid, "code must be 1 to %d characters", MaxCode)
	}
	if !ValidCode(code) {
		if err := text.Check(code, text.Line); err != nil {
			return errs.New(errs.Invalid, "code: %v", err)
		}
		return errs.New(errs.Invalid, "code may contain only letters, digits, '_' and '-'")
	}
	return nil
}

// ValidCode reports whether code is 1 to MaxCode bytes of [A-Za-z0-9_-]:
// a code a link can have.
func ValidCode(code string) bool {
	if code == "" || len(code) > MaxCode {
		return false
	}
	for i := 0; i < len(code); i++ {
		if !codeByte(code[i]) {
			return false
		}
	}
	return true
}

// randomCode returns a GeneratedCode-character base62 code from 8 bytes of
// rnd. Reducing 64 bits modulo 62^7 skews the odds of a code by under 1 in
// 5 million, which no one can exploit.
func randomCode(rnd io.Reader) (string, error) {
	var b [8]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("link: read random code: %w", err)
	}
	return base62Code(binary.BigEndian.Uint64(b[:])), nil
}

// derivedCode returns the code an idempotent create uses at a given attempt:
// a hash of the user, the idempotency key and the attempt, so that a retry
// (from any node) routes to the same partition with the same dedup key and
// gets the first result back. It is as hard to guess as the idempotency key.
func derivedCode(user, idempotencyKey string, attempt int) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, s := range []string{"parley link code", user, idempotencyKey} {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	h.Write(n[:binary.PutUvarint(n[:], uint64(attempt))])
	return base62Code(binary.BigEndian.Uint64(h.Sum(nil)))
}

func base62Code(v uint64) string {
	v %= space62
	var digits [GeneratedCode]byte
	for i := GeneratedCode - 1; i >= 0; i-- {
		digits[i] = base62[v%62]
		v /= 62
	}
	return string(digits[:])
}

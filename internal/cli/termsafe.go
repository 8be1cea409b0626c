package cli

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// termSafe returns s with everything a terminal could act on escaped, for
// printing text others chose (a user name typed at login): control
// characters (C0, DEL, C1: escape sequences, carriage returns, tabs that
// would shift table columns) and the invisible bidirectional formatting
// characters that reorder what is shown, as \xNN or \uNNNN; invalid UTF-8
// bytes as \xNN; and the backslash itself as \\, so every escape is
// unambiguous.
func termSafe(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x100 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether termSafe would change s.
func needsEscape(s string) bool {
	for _, r := range s {
		if r == '\\' || r == utf8.RuneError || unicode.IsControl(r) || unsafeRune(r) {
			return true
		}
	}
	return false
}

// unsafeRune reports the characters beyond C0, DEL and C1 that change how
// a terminal shows text: bidirectional marks, embeddings, overrides and
// isolates, and the line and paragraph separators.
func unsafeRune(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x2028, r == 0x2029:
		return true
	}
	return unicode.IsControl(r)
}

// jsonTermSafe escapes, inside JSON text, the characters encoding/json
// leaves raw that a terminal could act on (DEL, C1, bidirectional
// formatting): each becomes its \uNNNN escape, which decodes to the same
// string. Outside strings JSON is ASCII, so only strings change.
func jsonTermSafe(b []byte) []byte {
	var out bytes.Buffer
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && r >= 0x7f && unsafeRune(r) {
			fmt.Fprintf(&out, `\u%04x`, r)
		} else {
			out.Write(b[i : i+size])
		}
		i += size
	}
	return out.Bytes()
}

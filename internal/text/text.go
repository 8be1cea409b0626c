// Package text is the one home of the rule for text that users choose and
// others see: messages, user, room and queue names, link codes and URLs.
// Every domain validates with Check; every client that prints such text
// escapes it with Escape.
//
// Check refuses the characters a terminal or a text renderer acts on
// instead of showing:
//
//   - control characters: C0 (U+0000–U+001F), DEL (U+007F) and C1
//     (U+0080–U+009F). ESC (U+001B) and CSI (U+009B) start the sequences
//     that clear a screen, move the cursor or retitle a window; CR returns
//     to the start of a line to overwrite it. Multi-line text (Lines:
//     messages) may hold newline (U+000A) and tab (U+0009), nothing else.
//   - the bidirectional embeddings, overrides and isolates (U+202A–U+202E,
//     U+2066–U+2069), which reorder how the text around them is shown
//     ("Trojan Source", CVE-2021-42574). The bidirectional marks (U+061C,
//     U+200E, U+200F) stay allowed: right-to-left writers need them and
//     they reorder nothing beyond their neighbours.
//   - bytes that are not UTF-8, which terminals decode in their own ways.
//
// The rule applies where a request becomes a command (the domain
// Services), never in Apply: commands logged before the rule existed must
// apply the same way on every replica, so stored data may still hold such
// characters, and clients escape what they print whatever the server
// accepted.
//
// The package uses the standard library only and no Unicode tables: the
// ranges above are written out, so every build classifies alike.
package text

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Kind says which layout characters a field may hold.
type Kind int

const (
	// Line is one line of text: names, codes, URLs. No control character
	// at all.
	Line Kind = iota
	// Lines is multi-line text: messages. Newline and tab are allowed.
	Lines
)

// Error is the first character Check refused in a string.
type Error struct {
	// Rune is the refused character; utf8.RuneError for a byte that is not
	// UTF-8, then Byte holds it.
	Rune rune
	// Byte is the byte that is not UTF-8, when Rune is utf8.RuneError.
	Byte byte
	// Offset is the byte offset of the character in the string.
	Offset int
}

// Error implements error: "control character U+001B not allowed". Callers
// put the field's name in front: "text: control character U+001B not
// allowed".
func (e *Error) Error() string {
	if e.Rune == utf8.RuneError {
		return fmt.Sprintf("byte 0x%02X is not UTF-8", e.Byte)
	}
	return Describe(e.Rune) + " not allowed"
}

// Describe names a character Check refuses: "control character U+001B",
// "bidirectional formatting character U+202E".
func Describe(r rune) string {
	if IsBidiControl(r) {
		return fmt.Sprintf("bidirectional formatting character U+%04X", r)
	}
	return fmt.Sprintf("control character U+%04X", r)
}

// Check returns nil when s holds only characters a field of kind k may
// hold, and otherwise an *Error naming the first character it may not.
func Check(s string, k Kind) error {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return &Error{Rune: r, Byte: s[i], Offset: i}
		case Forbidden(r, k):
			return &Error{Rune: r, Offset: i}
		}
		i += size
	}
	return nil
}

// Forbidden reports whether a field of kind k must not hold r.
func Forbidden(r rune, k Kind) bool {
	if k == Lines && (r == '\n' || r == '\t') {
		return false
	}
	return IsControl(r) || IsBidiControl(r)
}

// IsControl reports whether r is a control character: C0, DEL or C1.
func IsControl(r rune) bool {
	return r >= 0 && r < 0x20 || r >= 0x7f && r <= 0x9f
}

// IsBidiControl reports whether r is a bidirectional embedding, override
// or isolate (U+202A–U+202E, U+2066–U+2069), or their terminator.
func IsBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// invisible reports the characters that Escape writes out although Check
// allows them: the bidirectional marks and the line and paragraph
// separators, which change how a terminal lays text out without showing.
func invisible(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || r == 0x2028 || r == 0x2029
}

// Unsafe reports whether Escape writes r out as an escape (other than the
// backslash): control characters, bidirectional formatting and marks, and
// the line and paragraph separators.
func Unsafe(r rune) bool {
	return IsControl(r) || IsBidiControl(r) || invisible(r)
}

// Escape returns s with everything a terminal could act on written out, for
// printing text others chose: control characters (including newline and
// tab, which would break a line or a table's columns) as \xNN, the
// bidirectional formatting characters and marks and the line and paragraph
// separators as \uNNNN, bytes that are not UTF-8 as \xNN, and the backslash
// itself as \\, so that every escape is unambiguous.
func Escape(s string) string {
	return escape(s, false, "")
}

// EscapeLines is Escape for multi-line text shown on its own lines (a
// message): a newline stays a newline, followed by indent, so that a line
// of the text cannot pass for a line of the output around it; a tab stays
// a tab. Everything else is escaped as by Escape.
func EscapeLines(s, indent string) string {
	return escape(s, true, indent)
}

func escape(s string, lines bool, indent string) string {
	if !needsEscape(s, lines) {
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
		case lines && r == '\n':
			b.WriteString("\n" + indent)
		case lines && r == '\t':
			b.WriteByte('\t')
		case IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case Unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether escape would change s (or may: a valid
// U+FFFD is kept, and a newline changes only with an indent).
func needsEscape(s string, lines bool) bool {
	for _, r := range s {
		if r == '\\' || r == utf8.RuneError || (Unsafe(r) && !(lines && r == '\t')) {
			return true
		}
	}
	return false
}

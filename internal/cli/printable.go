package cli

import (
	"strconv"
	"strings"
	"unicode"
)

// printable returns s safe to print on a terminal: control characters
// (C0 and C1, but newline and tab), and Unicode bidirectional overrides,
// are shown escaped (\x1b, \u202e) instead of acting on the terminal.
func printable(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unsafeRune(r) {
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unsafeRune reports whether r may act on a terminal or reorder text.
func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.IsControl(r):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f:
		return true
	}
	return false
}

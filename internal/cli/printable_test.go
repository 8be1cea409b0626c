package cli

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":                 "plain text",
		"tab\tand\nnewline":          "tab\tand\nnewline",
		"\x1b[2J\x1b[Hfake":          `\x1b[2J\x1b[Hfake`,
		"title\x1b]0;pwned\x07":      `title\x1b]0;pwned\a`,
		"c1 \u009b31m":               `c1 \u009b31m`,
		"bidi \u202eevil":            `bidi \u202eevil`,
		"caf\u00e9 \U0001F600 emoji": "caf\u00e9 \U0001F600 emoji",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

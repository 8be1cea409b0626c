package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		kind Kind
		want string // "" for accepted
	}{
		{"plain", "hello, world", Line, ""},
		{"unicode", "héllo 世界 🙂", Line, ""},
		{"empty", "", Line, ""},
		{"escape sequence", "a\x1b[2Jb", Lines, "control character U+001B not allowed"},
		{"bell in a title sequence", "x\x1b]0;t\x07", Line, "control character U+001B not allowed"},
		{"carriage return", "a\rb", Lines, "control character U+000D not allowed"},
		{"newline in a line", "a\nb", Line, "control character U+000A not allowed"},
		{"tab in a line", "a\tb", Line, "control character U+0009 not allowed"},
		{"newline and tab in lines", "a\nb\tc", Lines, ""},
		{"NUL", "a\x00", Lines, "control character U+0000 not allowed"},
		{"DEL", "a\x7f", Line, "control character U+007F not allowed"},
		{"C1 NEL", "a\u0085", Lines, "control character U+0085 not allowed"},
		{"C1 CSI", "a\u009b2J", Lines, "control character U+009B not allowed"},
		{"right-to-left override", "abc\u202edef", Lines, "bidirectional formatting character U+202E not allowed"},
		{"left-to-right embedding", "\u202aabc", Line, "bidirectional formatting character U+202A not allowed"},
		{"first strong isolate", "a\u2068b", Lines, "bidirectional formatting character U+2068 not allowed"},
		{"pop directional isolate", "a\u2069", Lines, "bidirectional formatting character U+2069 not allowed"},
		{"right-to-left mark allowed", "שלום\u200f!", Lines, ""},
		{"arabic letter mark allowed", "a\u061cb", Line, ""},
		{"not UTF-8", "a\x9b2J", Lines, "byte 0x9B is not UTF-8"},
		{"first one named", "\u202e\x1b", Lines, "bidirectional formatting character U+202E not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.in, tc.kind)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Check(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCheck_Offset(t *testing.T) {
	err := Check("ab\u202ec", Lines)
	e, ok := err.(*Error)
	if !ok || e.Offset != 2 || e.Rune != 0x202e {
		t.Errorf("Check = %#v, want the override at offset 2", err)
	}
}

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"alice", "alice"},
		{"", ""},
		{"héllo 世界", "héllo 世界"},
		{"a\x1b[31mb", `a\x1b[31mb`},
		{"a\r\n\tb", `a\x0d\x0a\x09b`},
		{"\x7f\u0085\u009b", `\x7f\x85\x9b`},
		{"abc\u202edef\u2066\u200f", `abc\u202edef\u2066\u200f`},
		{"line\u2028sep", `line\u2028sep`},
		{`C:\x1b`, `C:\\x1b`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"\ufffd kept", "\ufffd kept"},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEscapeLines(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"one line", "one line"},
		{"two\nlines", "two\n    lines"},
		{"tab\tkept", "tab\tkept"},
		{"fake\r[10:00:00] bob: hi", `fake\x0d[10:00:00] bob: hi`},
		{"\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"a\\b", `a\\b`},
	} {
		if got := EscapeLines(tc.in, "    "); got != tc.want {
			t.Errorf("EscapeLines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzEscape checks that escaped text holds nothing a terminal acts on
// (newlines only where the text had them) and is valid UTF-8.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[2J", "a\nb\tc", "\u202e\u2066", "\xff\xfe", `\\x1b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Escape(s), EscapeLines(s, "  ")} {
			if !utf8.ValidString(out) {
				t.Fatalf("escape(%q) = %q: not UTF-8", s, out)
			}
			for _, r := range out {
				if Unsafe(r) && r != '\n' && r != '\t' {
					t.Fatalf("escape(%q) = %q holds %U", s, out, r)
				}
			}
		}
		if e := Escape(s); strings.ContainsAny(e, "\n\t") {
			t.Fatalf("Escape(%q) = %q keeps a newline or tab", s, e)
		}
		if n, m := strings.Count(s, "\n"), strings.Count(EscapeLines(s, "  "), "\n"); n != m {
			t.Fatalf("EscapeLines(%q) has %d newlines, want %d", s, m, n)
		}
		if Check(Escape(s), Line) != nil {
			t.Fatalf("Check refuses Escape(%q) = %q", s, Escape(s))
		}
	})
}

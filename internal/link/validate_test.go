package link

import (
	"bytes"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
)

func TestCheckURL(t *testing.T) {
	cases := []struct {
		url  string
		code errs.Code // "" when valid
	}{
		{"https://example.com", ""},
		{"http://example.com/a/b?c=d#e", ""},
		{"HTTPS://EXAMPLE.COM/Path", ""},
		{"http://localhost:8080/x", ""},
		{"http://[::1]:80/", ""},
		{"https://例え.jp/パス", ""},
		{"https://x.y/" + strings.Repeat("a", 2048-len("https://x.y/")), ""},
		{"https://x.y/" + strings.Repeat("a", 2049-len("https://x.y/")), errs.TooLarge},
		{"", errs.Invalid},
		{"javascript:alert(1)", errs.Invalid},
		{"JaVaScRiPt:alert(1)", errs.Invalid},
		{"data:text/html,<script>alert(1)</script>", errs.Invalid},
		{"file:///etc/passwd", errs.Invalid},
		{"ftp://x", errs.Invalid},
		{"//example.com/x", errs.Invalid},
		{"/relative/path", errs.Invalid},
		{"example.com", errs.Invalid},
		{" http://x", errs.Invalid},
		{"http://x ", errs.Invalid},
		{"http://x/a b", errs.Invalid},
		{"http://x/\t", errs.Invalid},
		{"http://x/\x00", errs.Invalid},
		{"http://x/\x7f", errs.Invalid},
		{"http:/x", errs.Invalid},
		{"http:x", errs.Invalid},
		{"http://", errs.Invalid},
		{"http:///path", errs.Invalid},
		{"http://:80/", errs.Invalid},
		{"http://x:port/", errs.Invalid},
		{"http://user:pass@evil.com/", errs.Invalid},
		{"http://good.com@evil.com/", errs.Invalid},
		{"http:\\\\evil.com", errs.Invalid},
		{"https://good.com\\@evil.com", errs.Invalid},
		{"http://x/\xff", errs.Invalid},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			err := CheckURL(tc.url, DefaultMaxURL)
			if got := errs.CodeOf(err); got != tc.code {
				t.Fatalf("CheckURL(%q) = %v (code %q), want %q", tc.url, err, got, tc.code)
			}
			if err != nil && !strings.Contains(err.Error(), "url") {
				t.Fatalf("error %q does not name the field url", err)
			}
		})
	}
}

func TestCheckCode(t *testing.T) {
	cases := []struct {
		code string
		ok   bool
	}{
		{"a", true},
		{"abc-DEF_123", true},
		{strings.Repeat("x", 64), true},
		{strings.Repeat("x", 65), false},
		{"", false},
		{"a.b", false},
		{"a/b", false},
		{"a b", false},
		{"é", false},
		{"%41", false},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			err := CheckCode(tc.code)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckCode(%q) = %v, want ok %v", tc.code, err, tc.ok)
			}
			if err != nil && (!errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "code")) {
				t.Fatalf("error %v is not invalid naming code", err)
			}
		})
	}
}

func TestGeneratedCodes(t *testing.T) {
	seen := map[string]bool{}
	for i := range 1000 {
		var code string
		if i%2 == 0 {
			var err error
			if code, err = randomCode(bytes.NewReader(bytes.Repeat([]byte{byte(i), byte(i >> 8), 7}, 3))); err != nil {
				t.Fatal(err)
			}
		} else {
			code = derivedCode("alice", "key", i)
		}
		if len(code) != GeneratedCode || CheckCode(code) != nil {
			t.Fatalf("generated code %q", code)
		}
		seen[code] = true
	}
	if len(seen) < 990 {
		t.Fatalf("only %d distinct codes of 1000", len(seen))
	}
	if derivedCode("alice", "k", 0) != derivedCode("alice", "k", 0) {
		t.Fatal("derived codes are not stable")
	}
	for _, other := range []string{derivedCode("alice", "k", 1), derivedCode("bob", "k", 0), derivedCode("alic", "ek", 0)} {
		if other == derivedCode("alice", "k", 0) {
			t.Fatal("derived codes collide across inputs")
		}
	}
	if base62Code(0) != "0000000" || base62Code(space62-1) != "zzzzzzz" {
		t.Fatalf("base62 bounds: %q %q", base62Code(0), base62Code(space62-1))
	}
}

func FuzzCheckURL(f *testing.F) {
	f.Add("https://example.com/x")
	f.Add("JaVaScRiPt:alert(1)")
	f.Fuzz(func(t *testing.T, raw string) {
		if CheckURL(raw, DefaultMaxURL) != nil {
			return
		}
		lower := strings.ToLower(raw)
		if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
			t.Fatalf("accepted %q", raw)
		}
	})
}

// Control and bidirectional formatting characters are refused naming the
// character, in URLs and codes alike.
func TestCheck_NamesTheCharacter(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"escape in url", CheckURL("https://x.y/\x1b[2J", DefaultMaxURL), "url: control character U+001B not allowed"},
		{"C1 in url", CheckURL("https://x.y/\u009b2J", DefaultMaxURL), "url: control character U+009B not allowed"},
		{"override in url", CheckURL("https://x.y/\u202egpj.exe", DefaultMaxURL), "url: bidirectional formatting character U+202E not allowed"},
		{"isolate in url", CheckURL("https://x.y/a\u2067b", DefaultMaxURL), "url: bidirectional formatting character U+2067 not allowed"},
		{"escape in code", CheckCode("docs\x1b]0;t\x07"), "code: control character U+001B not allowed"},
		{"override in code", CheckCode("a\u202e"), "code: bidirectional formatting character U+202E not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errs.Is(tc.err, errs.Invalid) || !strings.Contains(tc.err.Error(), tc.want) {
				t.Errorf("got %v, want invalid containing %q", tc.err, tc.want)
			}
		})
	}
}

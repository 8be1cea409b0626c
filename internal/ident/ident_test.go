package ident

import (
	"strings"
	"testing"
)

// The expectations are literals: keys and Apply on every replica, old and
// new, depend on these answers.
func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"alice":                  "alice",
		"Alice.B-C_D9\xc3\x84Z":  "alice.b-c_d9\xc3\x84z", // non-ASCII bytes pass through
		"ÄBC":                    "Äbc",
		"@[`{":                   "@[`{", // the neighbours of A-Z and a-z
		strings.Repeat("AB", 20): strings.Repeat("ab", 20),
	} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
		if got := string(AppendFold([]byte("x"), in)); got != "x"+want {
			t.Errorf("AppendFold(x, %q) = %q", in, got)
		}
		if !EqualFold(in, want) || !EqualFold(want, in) {
			t.Errorf("EqualFold(%q, %q) = false", in, want)
		}
	}
	if EqualFold("alice", "alicf") || EqualFold("a", "ab") || EqualFold("@", "`") {
		t.Error("EqualFold matched different names")
	}
	if n := testing.AllocsPerRun(10, func() { _ = Fold("already.lower") }); n != 0 {
		t.Errorf("Fold of a folded name allocates %v times", n)
	}
}

func TestValidName(t *testing.T) {
	long := "abcdefghijklmnopqrstuvwxyz012345" // 32 bytes
	for _, tc := range []struct {
		name        string
		valid, user bool
	}{
		{"a", true, true},
		{"A.b-C_9", true, true},
		{long, true, true},
		{long + "6", true, false},
		{"", false, false},
		{"a b", false, false},
		{"a/b", false, false},
		{"\xc3\x84", false, false},
		{"a\x00", false, false},
	} {
		if got := ValidName(tc.name, 64); got != tc.valid {
			t.Errorf("ValidName(%q, 64) = %v, want %v", tc.name, got, tc.valid)
		}
		if got := ValidUsername(tc.name); got != tc.user {
			t.Errorf("ValidUsername(%q) = %v, want %v", tc.name, got, tc.user)
		}
	}
	for c := 0; c < 256; c++ {
		want := strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", rune(c)) && c < 128
		if IsNameByte(byte(c)) != want {
			t.Errorf("IsNameByte(%#x) = %v", c, !want)
		}
	}
}

func BenchmarkFold(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Fold("Alice.Example")
	}
}

package account

import (
	"crypto/rand"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/ident"
)

func TestParseToken(t *testing.T) {
	tok, err := newToken("alice.b-c_d", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	name, d, ok := parseToken(tok)
	if !ok || name != "alice.b-c_d" || d != tokenDigest(tok) {
		t.Fatalf("parseToken(%q) = (%q, %x, %v)", tok, name, d, ok)
	}
	random := tok[strings.LastIndexByte(tok, '.')+1:]
	cases := []string{
		"",
		"alice",
		"." + random,
		"Alice." + random,            // names in tokens are lowercased
		"al ice." + random,           // not a name byte
		"alice." + random[:31],       // short random part
		"alice." + random + "A",      // long random part
		"alice." + random[:31] + "=", // not base64url
		strings.Repeat("a", 33) + "." + random,
	}
	for _, c := range cases {
		if _, _, ok := parseToken(c); ok {
			t.Errorf("parseToken(%q) accepted", c)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	tok, _ := newToken("alice", rand.Reader)
	f.Add(tok)
	f.Add("a.b")
	f.Fuzz(func(t *testing.T, tok string) {
		name, d, ok := parseToken(tok)
		if !ok {
			return
		}
		if CheckUsername(name) != nil || ident.Fold(name) != name || d != tokenDigest(tok) {
			t.Fatalf("parseToken(%q) accepted name %q", tok, name)
		}
	})
}

package chat

import (
	"strings"
	"testing"
)

var cheapHash = HashParams{Time: 1, MemoryKiB: 64, Threads: 1}

func TestHashPassword_Verify(t *testing.T) {
	h, err := hashPassword("correct horse", cheapHash)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash %q is not an argon2id PHC string", h)
	}
	h2, _ := hashPassword("correct horse", cheapHash)
	if h == h2 {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	for _, tc := range []struct {
		pw   string
		want bool
	}{{"correct horse", true}, {"correct horse ", false}, {"", false}, {"Correct horse", false}} {
		ok, err := verifyPassword(h, tc.pw)
		if err != nil || ok != tc.want {
			t.Errorf("verify(%q) = %v, %v; want %v", tc.pw, ok, err, tc.want)
		}
	}
}

func TestVerifyPassword_BadHashes(t *testing.T) {
	good, _ := hashPassword("pw", cheapHash)
	parts := strings.Split(good, "$")
	cases := map[string]string{
		"empty":         "",
		"bcrypt":        "$2a$10$abcdefghijklmnopqrstuv",
		"argon2i":       strings.Replace(good, "argon2id", "argon2i", 1),
		"version":       strings.Replace(good, "v=19", "v=16", 1),
		"huge memory":   strings.Replace(good, "m=64", "m=4294967295", 1),
		"huge time":     strings.Replace(good, "t=1", "t=1000", 1),
		"zero threads":  strings.Replace(good, "p=1", "p=0", 1),
		"unknown param": strings.Replace(good, "p=1", "x=1", 1),
		"bad salt":      strings.Join([]string{"", parts[1], parts[2], parts[3], "!!", parts[5]}, "$"),
		"short key":     strings.Join([]string{"", parts[1], parts[2], parts[3], parts[4], "AAAA"}, "$"),
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			if ok, err := verifyPassword(h, "pw"); err == nil || ok {
				t.Fatalf("verify(%q) = %v, %v; want error", h, ok, err)
			}
		})
	}
}

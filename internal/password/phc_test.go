package password_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/password"
	"github.com/parley-chat/parley/internal/password/passwordtest"
)

// Stored hashes must verify on every node, old and new: these literals pin
// the format. pinSalt is bytes 0 to 15.
var pinSalt = []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

const (
	pinPassword   = "correct horse battery staple"
	pinDefaultPHC = "$argon2id$v=19$m=19456,t=2,p=1$AAECAwQFBgcICQoLDA0ODw$gYJZtjEAJqjg26xdLmknq8/bB7MiWPrE9hsYuA+SkIU"
	pinCheapPHC   = "$argon2id$v=19$m=64,t=1,p=1$AAECAwQFBgcICQoLDA0ODw$ktxdZwGWI4aL3geSdeUi9LfoIT00FO2Fy8KsikERcog"
)

func TestHash_Pinned(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    password.Params
		want string
	}{{"default", password.DefaultParams(), pinDefaultPHC}, {"cheap", passwordtest.Params(), pinCheapPHC}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := password.Hash(pinPassword, pinSalt, tc.p); got != tc.want {
				t.Fatalf("Hash = %s, pinned %s", got, tc.want)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	re := regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)
	if !re.MatchString(pinDefaultPHC) {
		t.Fatalf("PHC string %q does not have the expected form", pinDefaultPHC)
	}
	for _, phc := range []string{pinDefaultPHC, pinCheapPHC} {
		for _, tc := range []struct {
			pw   string
			want bool
		}{{pinPassword, true}, {pinPassword + " ", false}, {"Correct horse battery staple", false}, {"", false}} {
			if ok, err := password.Verify(phc, tc.pw); err != nil || ok != tc.want {
				t.Errorf("Verify(%s, %q) = (%v, %v), want %v", phc, tc.pw, ok, err, tc.want)
			}
		}
	}
}

func TestParse_Malformed(t *testing.T) {
	good := pinCheapPHC
	parts := strings.Split(good, "$")
	join := func(salt, key string) string {
		return strings.Join([]string{"", parts[1], parts[2], parts[3], salt, key}, "$")
	}
	cases := map[string]string{
		"empty":           "",
		"bcrypt":          "$2a$10$abcdefghijklmnopqrstuv",
		"argon2i":         strings.Replace(good, "argon2id", "argon2i", 1),
		"version":         strings.Replace(good, "v=19", "v=16", 1),
		"little memory":   strings.Replace(good, "m=64", "m=4", 1),
		"huge memory":     strings.Replace(good, "m=64", "m=4294967295", 1),
		"much memory":     strings.Replace(good, "m=64", "m=99999999", 1),
		"no time":         strings.Replace(good, "t=1", "t=0", 1),
		"huge time":       strings.Replace(good, "t=1", "t=1000", 1),
		"zero threads":    strings.Replace(good, "p=1", "p=0", 1),
		"many threads":    strings.Replace(good, "p=1", "p=256", 1),
		"unknown param":   strings.Replace(good, "p=1", "x=1", 1),
		"reordered":       strings.Replace(good, "m=64,t=1", "t=1,m=64", 1),
		"bad salt":        join("!!", parts[5]),
		"short salt":      join("AAAA", parts[5]),
		"short key":       join(parts[4], "AAAA"),
		"extra part":      good + "$extra",
		"bad salt base64": strings.Replace(good, "$AAEC", "$!AEC", 1),
	}
	for name, phc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, _, err := password.Parse(phc); err == nil {
				t.Fatalf("Parse(%q) accepted", phc)
			}
			if ok, err := password.Verify(phc, pinPassword); err == nil || ok {
				t.Fatalf("Verify(%q) = %v, %v; want an error", phc, ok, err)
			}
		})
	}
	p, salt, key, err := password.Parse(good)
	if err != nil || p != passwordtest.Params() || len(salt) != 16 || len(key) != 32 {
		t.Fatalf("Parse(good) = %+v, %d-byte salt, %d-byte key, %v", p, len(salt), len(key), err)
	}
}

func TestParams_Validate(t *testing.T) {
	ok := passwordtest.Params()
	cases := map[string]func(*password.Params){
		"no time":       func(p *password.Params) { p.Time = 0 },
		"much time":     func(p *password.Params) { p.Time = 17 },
		"no threads":    func(p *password.Params) { p.Threads = 0 },
		"little memory": func(p *password.Params) { p.MemoryKiB = 7 },
		"much memory":   func(p *password.Params) { p.MemoryKiB = 1<<20 + 1 },
		"short salt":    func(p *password.Params) { p.SaltLen = 4 },
		"long salt":     func(p *password.Params) { p.SaltLen = 65 },
		"short key":     func(p *password.Params) { p.KeyLen = 8 },
		"long key":      func(p *password.Params) { p.KeyLen = 129 },
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			p := ok
			mod(&p)
			if p.Validate() == nil {
				t.Fatalf("Validate(%+v) accepted", p)
			}
			if _, err := password.NewHasher(p, 1); err == nil {
				t.Fatalf("NewHasher(%+v) accepted", p)
			}
		})
	}
	for _, p := range []password.Params{ok, password.DefaultParams()} {
		if err := p.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v", p, err)
		}
	}
}

func TestHasher_HashAndVerify(t *testing.T) {
	h := passwordtest.Hasher()
	ctx := context.Background()
	a, err := h.Hash(ctx, pinPassword)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := h.Hash(ctx, pinPassword)
	if a == b || !strings.HasPrefix(a, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hashes %q and %q: want two salted argon2id strings", a, b)
	}
	if ok, err := h.Verify(ctx, a, pinPassword); !ok || err != nil {
		t.Fatalf("Verify(own hash) = %v, %v", ok, err)
	}
	if ok, err := h.Verify(ctx, pinDefaultPHC, pinPassword); !ok || err != nil {
		t.Fatalf("Verify(hash under other params) = %v, %v", ok, err)
	}
	// No stored hash (unknown user): the dummy is verified, the answer is no.
	if ok, err := h.Verify(ctx, "", "anything"); ok || err != nil {
		t.Fatalf("Verify of a missing hash = (%v, %v), want (false, nil)", ok, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(pinCheapPHC)
	f.Add("$argon2id$v=19$m=8,t=1,p=1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA")
	f.Fuzz(func(t *testing.T, phc string) {
		p, salt, key, err := password.Parse(phc)
		if err != nil {
			return
		}
		if p.Validate() != nil || len(salt) != p.SaltLen || len(key) != int(p.KeyLen) {
			t.Fatalf("Parse(%q) accepted out-of-bounds parameters %+v", phc, p)
		}
		if again := password.Hash("x", salt, p); len(strings.Split(again, "$")) != 6 {
			t.Fatalf("Hash under parsed %+v = %q", p, again)
		}
	})
}

func BenchmarkHash_Default(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		password.Hash(pinPassword, pinSalt, password.DefaultParams())
	}
}

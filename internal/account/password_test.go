package account

import (
	"bytes"
	"context"
	"crypto/rand"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testParams are cheap argon2id costs for tests that are not about hashing.
var testParams = HashParams{MemoryKiB: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}

func TestHashPassword_DefaultParams(t *testing.T) {
	salt := bytes.Repeat([]byte{7}, 16)
	phc := hashPassword("correct horse", salt, DefaultHashParams())
	re := regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)
	if !re.MatchString(phc) {
		t.Fatalf("PHC string %q does not have the expected form", phc)
	}
	for _, tc := range []struct {
		pw   string
		want bool
	}{{"correct horse", true}, {"correct horsf", false}, {"", false}} {
		if ok, err := verifyPassword(phc, tc.pw); err != nil || ok != tc.want {
			t.Fatalf("verify(%q) = (%v, %v), want %v", tc.pw, ok, err, tc.want)
		}
	}
}

func TestParsePHC_Errors(t *testing.T) {
	good := hashPassword("pw", bytes.Repeat([]byte{1}, 16), testParams)
	cases := []string{
		"",
		"$argon2i$v=19$m=64,t=1,p=1$AQEBAQEBAQEBAQEBAQEBAQ$" + strings.Repeat("A", 43),
		strings.Replace(good, "v=19", "v=16", 1),
		strings.Replace(good, "m=64", "m=4", 1),
		strings.Replace(good, "m=64", "m=99999999", 1),
		strings.Replace(good, "t=1", "t=0", 1),
		strings.Replace(good, "p=1", "p=0", 1),
		strings.Replace(good, "m=64,t=1", "t=1,m=64", 1),
		strings.Replace(good, "$AQEB", "$!QEB", 1),
		good + "$extra",
	}
	for _, phc := range cases {
		if _, _, _, err := parsePHC(phc); err == nil {
			t.Errorf("parsePHC(%q) accepted", phc)
		}
	}
	if _, _, _, err := parsePHC(good); err != nil {
		t.Fatalf("parsePHC(good): %v", err)
	}
}

func FuzzParsePHC(f *testing.F) {
	f.Add(hashPassword("pw", bytes.Repeat([]byte{1}, 16), testParams))
	f.Add("$argon2id$v=19$m=8,t=1,p=1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA")
	f.Fuzz(func(t *testing.T, phc string) {
		p, salt, key, err := parsePHC(phc)
		if err != nil {
			return
		}
		if p.MemoryKiB > maxMemoryKiB || p.Time > maxTime || len(salt) > maxSaltLen || len(key) > maxKeyLen {
			t.Fatalf("parsePHC(%q) accepted out-of-bounds parameters %+v", phc, p)
		}
	})
}

func TestHasher_Concurrency(t *testing.T) {
	h, err := newHasher(testParams, 2, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// Fill the semaphore: a third hash must wait, and give up with its ctx.
	h.sem <- struct{}{}
	h.sem <- struct{}{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := h.hash(ctx, "password1"); err == nil {
		t.Fatal("hash ran past a full semaphore")
	}
	<-h.sem
	<-h.sem

	var running, peak atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := h.acquire(context.Background()); err != nil {
				t.Error(err)
				return
			}
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(2 * time.Millisecond)
			running.Add(-1)
			h.release()
		})
	}
	wg.Wait()
	if peak.Load() > 2 {
		t.Fatalf("%d hashes at once, want at most 2", peak.Load())
	}
}

func TestHasher_UnknownUserVerifies(t *testing.T) {
	h, err := newHasher(testParams, 1, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := h.verify(context.Background(), "", "anything"); ok || err != nil {
		t.Fatalf("verify of unknown user = (%v, %v), want (false, nil)", ok, err)
	}
}

func TestParseToken(t *testing.T) {
	tok, err := newToken("alice.b-c_d", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	name, d, ok := parseToken(tok, 32)
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
		if _, _, ok := parseToken(c, 32); ok {
			t.Errorf("parseToken(%q) accepted", c)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	tok, _ := newToken("alice", rand.Reader)
	f.Add(tok)
	f.Add("a.b")
	f.Fuzz(func(t *testing.T, tok string) {
		name, d, ok := parseToken(tok, 32)
		if !ok {
			return
		}
		if CheckUsername(name, 32) != nil || asciiLower(name) != name || d != tokenDigest(tok) {
			t.Fatalf("parseToken(%q) accepted name %q", tok, name)
		}
	})
}

func BenchmarkHashPassword_Default(b *testing.B) {
	salt := bytes.Repeat([]byte{7}, 16)
	b.ReportAllocs()
	for b.Loop() {
		hashPassword("correct horse battery", salt, DefaultHashParams())
	}
}

package account

import "testing"

// The encodings below are stored (password hashes in user records) or
// compared across nodes (dedup keys, folded names): every replica, old and
// new, must compute them byte for byte alike. They are pinned as literals;
// a change here is a change of the stored format.

// pinSalt is the fixed salt of the pinned hashes: bytes 0 to 15.
var pinSalt = []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

const (
	pinPassword = "correct horse battery staple"
	// pinDefaultPHC is pinPassword under the default costs with pinSalt.
	pinDefaultPHC = "$argon2id$v=19$m=19456,t=2,p=1$AAECAwQFBgcICQoLDA0ODw$gYJZtjEAJqjg26xdLmknq8/bB7MiWPrE9hsYuA+SkIU"
	// pinCheapPHC is pinPassword at m=64, t=1, p=1 with pinSalt.
	pinCheapPHC = "$argon2id$v=19$m=64,t=1,p=1$AAECAwQFBgcICQoLDA0ODw$ktxdZwGWI4aL3geSdeUi9LfoIT00FO2Fy8KsikERcog"
)

func TestPin_PasswordHash(t *testing.T) {
	if got := hashPassword(pinPassword, pinSalt, DefaultHashParams()); got != pinDefaultPHC {
		t.Errorf("default hash = %s, pinned %s", got, pinDefaultPHC)
	}
	cheap := HashParams{MemoryKiB: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}
	if got := hashPassword(pinPassword, pinSalt, cheap); got != pinCheapPHC {
		t.Errorf("cheap hash = %s, pinned %s", got, pinCheapPHC)
	}
	for _, phc := range []string{pinDefaultPHC, pinCheapPHC} {
		if ok, err := verifyPassword(phc, pinPassword); !ok || err != nil {
			t.Errorf("verify(%s) = %v, %v", phc, ok, err)
		}
		if ok, err := verifyPassword(phc, pinPassword+"!"); ok || err != nil {
			t.Errorf("verify(%s, wrong password) = %v, %v", phc, ok, err)
		}
	}
}

func TestPin_DedupKey(t *testing.T) {
	// Tag 'A', op, uvarint len(name), name, idempotency key.
	if got, want := dedupKey(opCreateUser, "alice", "retry-1"), "AU\x05aliceretry-1"; got != want {
		t.Errorf("dedupKey = %q, pinned %q", got, want)
	}
	if got := dedupKey(opCreateUser, "alice", ""); got != "" {
		t.Errorf("dedupKey without idempotency key = %q, want empty", got)
	}
}

func TestPin_Names(t *testing.T) {
	if got, want := asciiLower("Alice.B-C_D9\xc3\x84Z"), "alice.b-c_d9\xc3\x84z"; got != want {
		t.Errorf("asciiLower = %q, pinned %q", got, want)
	}
	long := "abcdefghijklmnopqrstuvwxyz012345" // 32 bytes, the username limit
	for name, ok := range map[string]bool{"a": true, "A.b-C_9": true, long: true, long + "6": false, "": false, "a b": false, "\xc3\x84": false, "a/b": false} {
		if got := CheckUsername(name, DefaultMaxUsername) == nil; got != ok {
			t.Errorf("CheckUsername(%q) ok = %v, pinned %v", name, got, ok)
		}
	}
}

package account

import (
	"testing"

	"github.com/parley-chat/parley/internal/ident"
)

// The encodings below are compared across nodes (dedup keys, folded names):
// every replica, old and new, must compute them byte for byte alike. They
// are pinned as literals; a change here is a change of the format. Password
// hashes are pinned in internal/password.

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
	if got, want := ident.Fold("Alice.B-C_D9\xc3\x84Z"), "alice.b-c_d9\xc3\x84z"; got != want {
		t.Errorf("ident.Fold = %q, pinned %q", got, want)
	}
	long := "abcdefghijklmnopqrstuvwxyz012345" // 32 bytes, the username limit
	for name, ok := range map[string]bool{"a": true, "A.b-C_9": true, long: true, long + "6": false, "": false, "a b": false, "\xc3\x84": false, "a/b": false} {
		if got := CheckUsername(name) == nil; got != ok {
			t.Errorf("CheckUsername(%q) ok = %v, pinned %v", name, got, ok)
		}
	}
}

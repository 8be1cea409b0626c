package chat

import "testing"

// The encodings below are stored (member keys) or compared across nodes
// (dedup keys, folded names): every replica, old and new, must compute them
// byte for byte alike. They are pinned as literals; a change here is a
// change of the stored format. Room password hashes are pinned in
// internal/password.

func TestPin_DedupKey(t *testing.T) {
	// Tag 'C', uvarint len(folded user), folded user, idempotency key.
	if got, want := DedupKey("Alice", "retry-1"), "C\x05aliceretry-1"; got != want {
		t.Errorf("DedupKey = %q, pinned %q", got, want)
	}
	if got := DedupKey("alice", ""); got != "" {
		t.Errorf("DedupKey without idempotency key = %q, want empty", got)
	}
}

func TestPin_Names(t *testing.T) {
	if got, err := CanonicalRoom("General.Room-1_X"); got != "general.room-1_x" || err != nil {
		t.Errorf("CanonicalRoom = %q, %v", got, err)
	}
	long := "abcdefghijklmnopqrstuvwxyz012345" // 32 bytes, the username limit
	for name, ok := range map[string]bool{"a": true, "A.b-C_9": true, long: true, long + "6": false, "": false, "a b": false, "\xc3\x84": false} {
		if got := checkUser(name) == nil; got != ok {
			t.Errorf("checkUser(%q) ok = %v, pinned %v", name, got, ok)
		}
	}
	if got := string(memberKey("general", "BoB")); got != "c/general/m/bob" {
		t.Errorf("memberKey = %q", got)
	}
}

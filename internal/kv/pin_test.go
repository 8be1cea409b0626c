package kv

import "testing"

// TestPin_DedupKey pins the dedup key layout: retries through any node, old
// or new, must build the same key.
func TestPin_DedupKey(t *testing.T) {
	// Tag 'K', uvarint len(user), user, idempotency key.
	if got, want := DedupKey("alice", "retry-1"), "K\x05aliceretry-1"; got != want {
		t.Errorf("DedupKey = %q, pinned %q", got, want)
	}
	if got := DedupKey("alice", ""); got != "" {
		t.Errorf("DedupKey without idempotency key = %q, want empty", got)
	}
}

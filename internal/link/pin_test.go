package link

import (
	"testing"

	"github.com/parley-chat/parley/internal/ident"
)

// TestPin_DedupKey pins the dedup key layout: retries through any node, old
// or new, must build the same key.
func TestPin_DedupKey(t *testing.T) {
	// Tag 'L', op, uvarint len(user), user, uvarint attempt, idempotency key.
	if got, want := dedupKey(opCreate, "alice", "retry-1", 2), "LC\x05alice\x02retry-1"; got != want {
		t.Errorf("dedupKey = %q, pinned %q", got, want)
	}
	if got := dedupKey(opCreate, "alice", "", 0); got != "" {
		t.Errorf("dedupKey without idempotency key = %q, want empty", got)
	}
	if got, want := ident.Fold("Alice.B-C_D9\xc3\x84Z"), "alice.b-c_d9\xc3\x84z"; got != want {
		t.Errorf("ident.Fold = %q, pinned %q", got, want)
	}
}

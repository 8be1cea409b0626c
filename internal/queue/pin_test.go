package queue

import (
	"testing"

	"github.com/parley-chat/parley/internal/ident"
)

// TestPin_DedupKey pins the dedup key layout: retries through any node, old
// or new, must build the same key.
func TestPin_DedupKey(t *testing.T) {
	// Tag 'Q', then user, queue and idempotency key each as a uvarint length
	// and bytes, then uvarint attempt when it is not 0.
	for _, tc := range []struct {
		attempt uint64
		want    string
	}{{0, "Q\x05Alice\x04jobs\x07retry-1"}, {3, "Q\x05Alice\x04jobs\x07retry-1\x03"}} {
		if got := DedupKey("Alice", "jobs", "retry-1", tc.attempt); got != tc.want {
			t.Errorf("DedupKey(attempt %d) = %q, pinned %q", tc.attempt, got, tc.want)
		}
	}
	if got := DedupKey("alice", "jobs", "", 1); got != "" {
		t.Errorf("DedupKey without idempotency key = %q, want empty", got)
	}
}

// TestPin_Names pins the folding and alphabet of names, which keys and Apply
// use on every replica.
func TestPin_Names(t *testing.T) {
	if got, want := ident.Fold("Alice.B-C_D9\xc3\x84Z"), "alice.b-c_d9\xc3\x84z"; got != want {
		t.Errorf("fold = %q, pinned %q", got, want)
	}
	if !ident.EqualFold("Alice", "aLICE") || ident.EqualFold("alice", "alicf") || ident.EqualFold("a", "ab") {
		t.Error("sameUser does not compare ASCII case-insensitively")
	}
	for name, ok := range map[string]bool{"a": true, "A.b-C_9": true, "": false, "a b": false, "\xc3\x84": false, "a/b": false} {
		if got := ident.ValidName(name, 64); got != ok {
			t.Errorf("ident.ValidName(%q) = %v, pinned %v", name, got, ok)
		}
	}
}

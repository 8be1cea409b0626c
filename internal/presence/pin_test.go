package presence

import "testing"

// TestPin_Fold pins how usernames are folded for lease keys and routing on
// every replica.
func TestPin_Fold(t *testing.T) {
	if got, want := Fold("Alice.B-C_D9\xc3\x84Z"), "alice.b-c_d9\xc3\x84z"; got != want {
		t.Errorf("Fold = %q, pinned %q", got, want)
	}
	if got, want := string(leaseKey("alice", "n1")), string(leaseKey(Fold("ALICE"), "n1")); got != want {
		t.Errorf("leaseKey of a folded name = %q, want %q", got, want)
	}
}

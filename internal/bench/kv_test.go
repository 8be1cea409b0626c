package bench

import "testing"

// TestKVOp pins the choice of key and operation: KV and the peer workloads
// of internal/bench/peers all choose with KVOp, and results measured
// before and after a change compare only if the sequence stays the same.
func TestKVOp(t *testing.T) {
	for _, tc := range []struct {
		mix     string
		i, key  int
		wantPut bool
	}{
		{MixMixed, 0, 535, false},
		{MixMixed, 1, 465, false},
		{MixMixed, 3, 53, true},
		{MixMixed, 5, 618, true},
		{MixPut, 0, 535, true},
		{MixGet, 5, 618, false},
	} {
		key, put := KVOp(tc.mix, 1000, tc.i)
		if key != tc.key || put != tc.wantPut {
			t.Errorf("KVOp(%s, 1000, %d) = %d, %v; want %d, %v", tc.mix, tc.i, key, put, tc.key, tc.wantPut)
		}
	}
	if got := KVKey("bench/", 42); got != "bench/00000042" {
		t.Errorf("KVKey = %q", got)
	}
	if got := string(KVValue(28)); got != "abcdefghijklmnopqrstuvwxyzab" {
		t.Errorf("KVValue = %q", got)
	}
}

package partkey

import "testing"

// The partition of a key must never change: data placed by one release is
// found by the next. These values are FNV-1a 64 and must stay as they are.
func TestOf_Stable(t *testing.T) {
	for _, tc := range []struct {
		key        string
		partitions int
		want       uint64
	}{
		{"", 16, 1 + 0xcbf29ce484222325%16},
		{"a", 16, 1 + 0xaf63dc4c8601ec8c%16},
		{"lobby", 16, 1 + fnvRef("lobby")%16},
		{"room-42", 7, 1 + fnvRef("room-42")%7},
		{"x", 1, 1},
	} {
		if got := Of(tc.key, tc.partitions); got != tc.want {
			t.Errorf("Of(%q, %d) = %d, want %d", tc.key, tc.partitions, got, tc.want)
		}
	}
}

// fnvRef is an independent FNV-1a 64 so the test does not trust the code under test.
func fnvRef(s string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	return h
}

func TestOf_SpreadsKeys(t *testing.T) {
	counts := make([]int, 17)
	for i := 0; i < 16000; i++ {
		counts[Of("key-"+string(rune('a'+i%26))+string(rune(i)), 16)]++
	}
	for p := 1; p <= 16; p++ {
		if counts[p] < 500 || counts[p] > 1500 {
			t.Errorf("partition %d got %d of 16000 keys", p, counts[p])
		}
	}
}

func TestKV(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"plain", "plain"}, {"{user1}/a", "user1"}, {"x{user1}y{z}", "user1"},
		{"{}", "{}"}, {"a{}b{c}", "a{}b{c}"}, {"a{b", "a{b"}, {"a}b{c}", "c"}, {"{{a}}", "{a"},
	} {
		if got := KV(tc.key); got != tc.want {
			t.Errorf("KV(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

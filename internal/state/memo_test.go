package state

import "testing"

// A memo keeps two generations: a key read from the previous one moves to
// the current one, a full current generation becomes the previous one (Put
// says so), and the generation before is forgotten.
func TestMemo_Generations(t *testing.T) {
	m := NewMemo[int](10)
	if m.Put("a", 1, 6) || m.Put("b", 2, 6) {
		t.Fatal("rotated before the budget was taken")
	}
	if !m.Full() {
		t.Fatal("12 bytes of a 10-byte budget: want full")
	}
	if !m.Put("c", 3, 6) { // a and b become the previous generation
		t.Fatal("no rotation when full")
	}
	if v, ok := m.Get("a"); !ok || v != 1 { // moved to the current one
		t.Fatalf("a = %d, %v after one rotation, want 1, true", v, ok)
	}
	m.Put("d", 4, 6) // rotates: b, left in the old generation, is forgotten
	if _, ok := m.Get("b"); ok {
		t.Fatal("b survived two rotations without being read")
	}
	for k, want := range map[string]int{"a": 1, "c": 3, "d": 4} {
		if v, ok := m.Get(k); !ok || v != want {
			t.Errorf("%s = %d, %v, want %d", k, v, ok, want)
		}
	}
	m.Delete("a")
	if _, ok := m.Get("a"); ok || m.Len() != 2 {
		t.Fatalf("after Delete: a still held or Len %d, want 2", m.Len())
	}
	m.Reset()
	if m.Len() != 0 || m.Full() {
		t.Fatalf("after Reset: Len %d, full %v", m.Len(), m.Full())
	}
}

// Putting a key again charges its new size in place of the old one.
func TestMemo_PutAgainRecharges(t *testing.T) {
	m := NewMemo[string](10)
	m.Put("a", "x", 8)
	m.Put("a", "y", 1)
	if m.Full() {
		t.Fatal("a re-put at 1 byte still counts its old 8")
	}
	m.Charge(9)
	if !m.Full() {
		t.Fatal("Charge not counted")
	}
}

package queue

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/parley-chat/parley/internal/state"
)

// firstKey scans [lo, hi) through w as a receive seeks an index head: it
// stops at the first key.
func firstKey(t *testing.T, w state.Writer, lo, hi []byte) string {
	t.Helper()
	var first string
	if err := w.Scan(lo, hi, func(k, _ []byte) bool { first = string(k); return false }); err != nil {
		t.Fatal(err)
	}
	return first
}

// TestKnownRanges_AnswerWithoutTheStateWithinBounds: a scan that stops at
// its first key still teaches the range, and later scans within it (the
// floor raised) are answered from memory, writes included; a range that
// grows past the limit is forgotten, one found too big is not learned
// again until relearnAfter scans went there, and a value too long to keep
// is never learned.
func TestKnownRanges_AnswerWithoutTheStateWithinBounds(t *testing.T) {
	st := &scanCounter{Writer: state.NewMem()}
	kr := &knownRanges{limit: 4}
	mw := memoWriter{w: st, m: newApplyMemo(1 << 10), k: kr}
	key := func(i int) []byte { return fmt.Appendf(nil, "q/jobs/a/%03d", i) }
	lo, hi := []byte("q/jobs/a/"), []byte("q/jobs/a0")
	for i := 1; i <= 3; i++ {
		if err := mw.Set(key(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := firstKey(t, mw, lo, hi); got != string(key(1)) || st.scans != 1 {
		t.Fatalf("first scan: %q after %d state scans", got, st.scans)
	}
	// Within the known range: the floor past key 1, a key deleted, one added.
	if err := mw.Delete(key(2)); err != nil {
		t.Fatal(err)
	}
	if err := mw.Set(key(0), nil); err != nil {
		t.Fatal(err)
	}
	if got := firstKey(t, mw, key(1)[:len(key(1)):len(key(1))], hi); got != string(key(1)) {
		t.Fatalf("from key 1: %q", got)
	}
	if got := firstKey(t, mw, append(bytes.Clone(key(1)), 0), hi); got != string(key(3)) {
		t.Fatalf("past key 1, key 2 deleted: %q", got)
	}
	if got := firstKey(t, mw, lo, hi); got != string(key(0)) || st.scans != 1 {
		t.Fatalf("key 0 added: %q after %d state scans, want 1", got, st.scans)
	}
	// Growing past the limit (4 keys) forgets the range.
	for i := 4; i <= 5; i++ {
		if err := mw.Set(key(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if kr.find(lo, hi) != nil {
		t.Fatal("a range of 5 keys is still known with a limit of 4")
	}
	// Too big to learn: one scan finds out, the next relearnAfter-1 do not
	// try (each reads one key from the state, not all five).
	firstKey(t, mw, lo, hi)
	if r := kr.find(lo, hi); r != nil || !kr.mayLearnQuiet(lo, hi) {
		t.Fatal("a scan of 5 keys learned them, or left no mark")
	}
	visited := 0
	counted := memoWriter{w: visitCounter{st, &visited}, m: mw.m, k: kr}
	for range relearnAfter - 1 {
		firstKey(t, counted, lo, hi)
	}
	if visited != relearnAfter-1 {
		t.Fatalf("%d scans within a range found too big visited %d keys, want one each", relearnAfter-1, visited)
	}
	if err := mw.Delete(key(5)); err != nil {
		t.Fatal(err)
	}
	before := st.scans
	firstKey(t, mw, lo, hi) // relearnAfter scans went there: this one learns
	firstKey(t, mw, lo, hi)
	if st.scans != before+1 || kr.find(lo, hi) == nil {
		t.Fatalf("after relearnAfter scans: %d state scans of 2, known %v", st.scans-before, kr.find(lo, hi) != nil)
	}
	// A long value is not kept: setting one forgets the range, and a
	// range holding one is not learned (3 keys and the long one: within
	// the limit).
	if err := mw.Delete(key(4)); err != nil {
		t.Fatal(err)
	}
	if err := mw.Set(key(6), bytes.Repeat([]byte("x"), maxKnownValue+1)); err != nil {
		t.Fatal(err)
	}
	if kr.find(lo, hi) != nil {
		t.Fatal("a range holding a long value is still known")
	}
	kr.reset()
	firstKey(t, mw, lo, hi)
	if kr.find(lo, hi) != nil {
		t.Fatal("a range holding a long value was learned")
	}
}

// mayLearnQuiet reports whether a range found too big covers [lo, hi),
// without counting a scan.
func (kr *knownRanges) mayLearnQuiet(lo, hi []byte) bool {
	for i := range kr.r[:kr.n] {
		if r := &kr.r[i]; r.big && r.covers(lo, hi) {
			return true
		}
	}
	return false
}

// visitCounter counts the entries its scans pass on.
type visitCounter struct {
	state.Writer
	visits *int
}

func (v visitCounter) Scan(lo, hi []byte, fn func(k, v []byte) bool) error {
	return v.Writer.Scan(lo, hi, func(k, val []byte) bool {
		*v.visits++
		return fn(k, val)
	})
}

package queue

import (
	"bytes"

	"github.com/parley-chat/parley/internal/state"
)

// memoBudget bounds one generation of a partition's applyMemo, in
// approximate bytes.
const memoBudget = 1 << 20

// applyMemo keeps, for one partition, the stored values Apply reads on
// nearly every command — queue records, ready-index floors, FIFO group
// records and message records written lately — so that it does not ask
// Pebble for each of them again. It is a memo of the state, not a second
// state: every write of such a key within Apply goes through memoWriter,
// which writes the state and then the memo, so an entry answers exactly
// as the stored key would; a key it does not hold is read from the state.
// Replicas therefore apply identically whatever each one's memo holds, and
// what it evicts changes nothing but speed. It must be dropped whenever
// the state is replaced under it: the engine resets it when the group
// opens and after a snapshot (state.Resetter), as it does kv's applyCache.
//
// Its entries live in a state.Memo (two generations under a byte budget),
// as kv's applyCache's do.
type applyMemo = state.Memo[memoEntry]

// memoEntry is what the state holds under a key: its value, or nothing.
type memoEntry struct {
	v     []byte
	found bool
}

func newApplyMemo(budget int) *applyMemo { return state.NewMemo[memoEntry](budget) }

// remember holds what the state holds under key, charged its bytes.
func remember(m *applyMemo, key string, e memoEntry) { m.Put(key, e, 64+len(key)+len(e.v)) }

// memoKey reports whether Apply reads key by Get often enough to keep it:
// a queue record ("q/!/<queue>"), or under "q/<queue>/" a message record
// (m/), a floor (f/) or a group record (g/). Index and timer keys are only
// scanned, never read by Get, and stay out of the memo.
func memoKey(key []byte) bool {
	if !bytes.HasPrefix(key, []byte(dataPrefix)) {
		return false
	}
	rest := key[len(dataPrefix):]
	if bytes.HasPrefix(rest, []byte("!/")) {
		return true
	}
	i := bytes.IndexByte(rest, '/')
	if i < 0 || len(rest) < i+3 || rest[i+2] != '/' {
		return false
	}
	switch rest[i+1] {
	case 'm', 'f', 'g':
		return true
	}
	return false
}

// memoWriter is the state.Writer one Apply uses: it reads and writes w,
// answering Gets of memo keys from m and scans within ranges k knows when
// it can, and keeping m and k up to date with every Set and Delete.
type memoWriter struct {
	w state.Writer
	m *applyMemo
	k *knownRanges
}

var _ state.Writer = memoWriter{}

// Get implements state.Reader.
func (mw memoWriter) Get(key []byte) ([]byte, bool, error) {
	if !memoKey(key) {
		return mw.w.Get(key)
	}
	if e, ok := mw.m.Get(string(key)); ok {
		return bytes.Clone(e.v), e.found, nil
	}
	v, found, err := mw.w.Get(key)
	if err != nil {
		return nil, false, err
	}
	remember(mw.m, string(key), memoEntry{v: bytes.Clone(v), found: found})
	return v, found, nil
}

// Scan implements state.Reader: a scan within a range k knows is answered
// from it; any other is read from w (which holds every write), and, unless
// k found the range too big lately, read to its end, up to what a known
// range may hold, so that k learns it.
func (mw memoWriter) Scan(lo, hi []byte, fn func(k, v []byte) bool) error {
	if r := mw.k.find(lo, hi); r != nil {
		r.scan(lo, hi, fn)
		return nil
	}
	l := learner{fn: fn, learning: mw.k.mayLearn(lo, hi)}
	if l.learning {
		l.limit = mw.k.maxEntries()
	}
	tried := l.learning
	if err := mw.w.Scan(lo, hi, l.next); err != nil {
		return err
	}
	if tried {
		mw.k.add(lo, hi, l.ents, !l.learning)
	}
	return nil
}

// Set implements state.Writer.
func (mw memoWriter) Set(key, value []byte) error {
	if err := mw.w.Set(key, value); err != nil {
		return err
	}
	mw.noteSet(key, value)
	return nil
}

// SetLatest implements state.LatestSetter: as Set, the store writing the
// value lazily when it can.
func (mw memoWriter) SetLatest(key, value []byte) error {
	if err := state.SetLatest(mw.w, key, value); err != nil {
		return err
	}
	mw.noteSet(key, value)
	return nil
}

// noteSet brings the known ranges and the memo up to date with a stored
// key = value.
func (mw memoWriter) noteSet(key, value []byte) {
	mw.k.set(key, value)
	if memoKey(key) {
		remember(mw.m, string(key), memoEntry{v: bytes.Clone(value), found: true})
	}
}

// Delete implements state.Writer.
func (mw memoWriter) Delete(key []byte) error {
	if err := mw.w.Delete(key); err != nil {
		return err
	}
	mw.k.deleted(key)
	if memoKey(key) {
		remember(mw.m, string(key), memoEntry{})
	}
	return nil
}

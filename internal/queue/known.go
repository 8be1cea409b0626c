package queue

import (
	"bytes"
	"slices"
	"sort"
)

// Bounds of what a partition's knownRanges holds.
const (
	// maxKnownRanges is how many scan ranges it knows; a new one then
	// takes the place of the oldest.
	maxKnownRanges = 16
	// maxKnownEntries is how many keys a known range may hold: a scan
	// that finds more learns nothing, and a range that grows past it is
	// forgotten.
	maxKnownEntries = 256
	// maxKnownValue is the largest value a known range may hold: its
	// ranges are the indexes and timers, whose values are empty, and
	// never message records.
	maxKnownValue = 32
	// relearnAfter is how many scans within a range found too big to
	// know pass before a scan tries to learn it again.
	relearnAfter = 64
)

// knownRanges remembers, for one partition, the whole content of scan
// ranges [lo, hi) Apply scanned that held few keys with small values, and
// answers a later scan within one of them without a Pebble seek. The
// ranges it learns are the ready indexes a receive seeks for its head:
// every receive seeks the queue's index from its floor and the
// receiver's own (which most queues never fill), and each seek goes
// through the batch, the memtables and every level — 5 % of a busy queue
// leader's CPU for the queue's index alone.
//
// Like applyMemo it is a memo, not a second state: memoWriter applies
// every Set and Delete to each known range that holds its key, so a range
// holds exactly the keys and values the state holds in it, and the
// StateMachine forgets every range whenever the state is replaced
// (Reset). A scan it cannot answer goes to the state, and a nil
// knownRanges knows nothing. As with the state's own scans, a scan's
// callback must not write. Only the apply goroutine uses it.
type knownRanges struct {
	r     [maxKnownRanges]knownRange
	n     int // r[:n] are in use
	next  int // the slot a new range takes once all are in use
	limit int // keys a range may hold; 0: maxKnownEntries
}

// knownRange is one range [lo, hi) (a nil hi has no upper bound) and, unless
// big, its every key in order.
type knownRange struct {
	lo, hi []byte
	ents   []knownEntry
	// big: when last scanned the range held more than a known range may,
	// so scans within it do not try to learn it; skips counts them.
	big   bool
	skips int
}

// knownEntry is one key of a known range and its value.
type knownEntry struct{ k, v []byte }

// contains reports whether the range holds key.
func (r *knownRange) contains(key []byte) bool {
	return bytes.Compare(key, r.lo) >= 0 && (r.hi == nil || bytes.Compare(key, r.hi) < 0)
}

// covers reports whether [lo, hi) lies within the range.
func (r *knownRange) covers(lo, hi []byte) bool {
	if bytes.Compare(lo, r.lo) < 0 {
		return false
	}
	if r.hi == nil {
		return true
	}
	return hi != nil && bytes.Compare(hi, r.hi) <= 0
}

// search returns the index of the first entry at or after key.
func (r *knownRange) search(key []byte) int {
	return sort.Search(len(r.ents), func(i int) bool { return bytes.Compare(r.ents[i].k, key) >= 0 })
}

// scan calls fn for the range's entries in [lo, hi), in order, until fn
// returns false.
func (r *knownRange) scan(lo, hi []byte, fn func(k, v []byte) bool) {
	ents := r.ents
	for i := r.search(lo); i < len(ents); i++ {
		e := ents[i]
		if hi != nil && bytes.Compare(e.k, hi) >= 0 || !fn(e.k, e.v) {
			return
		}
	}
}

// learner passes a scan's entries on to fn until fn stops it and, while
// learning, collects every entry of the range, up to limit keys with
// values of at most maxKnownValue bytes; past that it stops learning.
type learner struct {
	fn       func(k, v []byte) bool
	stopped  bool // fn returned false
	learning bool
	limit    int
	ents     []knownEntry
}

func (l *learner) next(k, v []byte) bool {
	if !l.stopped && !l.fn(k, v) {
		l.stopped = true
	}
	if l.learning {
		if len(l.ents) >= l.limit || len(v) > maxKnownValue {
			l.learning, l.ents = false, nil
		} else {
			l.ents = append(l.ents, knownEntry{k: bytes.Clone(k), v: bytes.Clone(v)})
		}
	}
	return !l.stopped || l.learning
}

// find returns the known range that holds all of [lo, hi), or nil.
func (kr *knownRanges) find(lo, hi []byte) *knownRange {
	if kr == nil {
		return nil
	}
	for i := range kr.r[:kr.n] {
		if r := &kr.r[i]; !r.big && r.covers(lo, hi) {
			return r
		}
	}
	return nil
}

// mayLearn reports whether a scan of [lo, hi) should try to learn it: not
// while it lies within a range found too big, until relearnAfter scans
// went there.
func (kr *knownRanges) mayLearn(lo, hi []byte) bool {
	if kr == nil {
		return false
	}
	for i := range kr.r[:kr.n] {
		r := &kr.r[i]
		if !r.big || !r.covers(lo, hi) {
			continue
		}
		if r.skips++; r.skips < relearnAfter {
			return false
		}
		kr.drop(i)
		return true
	}
	return true
}

// maxEntries is how many keys a range may hold.
func (kr *knownRanges) maxEntries() int {
	if kr.limit > 0 {
		return kr.limit
	}
	return maxKnownEntries
}

// add remembers that [lo, hi) holds exactly ents (which it keeps), or, when
// big, that it holds too much to know.
func (kr *knownRanges) add(lo, hi []byte, ents []knownEntry, big bool) {
	r := knownRange{lo: bytes.Clone(lo), hi: bytes.Clone(hi), ents: ents, big: big}
	if kr.n < maxKnownRanges {
		kr.r[kr.n] = r
		kr.n++
		return
	}
	kr.r[kr.next] = r
	kr.next = (kr.next + 1) % maxKnownRanges
}

// drop forgets the range in slot i.
func (kr *knownRanges) drop(i int) {
	kr.n--
	kr.r[i], kr.r[kr.n] = kr.r[kr.n], knownRange{}
	kr.next = 0
}

// set records that the state now holds value under key: each known range
// holding key holds it too, or is forgotten if that makes it too big.
func (kr *knownRanges) set(key, value []byte) {
	if kr == nil {
		return
	}
	for i := 0; i < kr.n; {
		r := &kr.r[i]
		if r.big || !r.contains(key) {
			i++
			continue
		}
		j := r.search(key)
		found := j < len(r.ents) && bytes.Equal(r.ents[j].k, key)
		switch {
		case len(value) > maxKnownValue || !found && len(r.ents) >= kr.maxEntries():
			kr.drop(i)
			continue
		case found:
			r.ents[j].v = bytes.Clone(value)
		default:
			r.ents = slices.Insert(r.ents, j, knownEntry{k: bytes.Clone(key), v: bytes.Clone(value)})
		}
		i++
	}
}

// deleted records that the state no longer holds key.
func (kr *knownRanges) deleted(key []byte) {
	if kr == nil {
		return
	}
	for i := range kr.r[:kr.n] {
		r := &kr.r[i]
		if r.big || !r.contains(key) {
			continue
		}
		if j := r.search(key); j < len(r.ents) && bytes.Equal(r.ents[j].k, key) {
			r.ents = slices.Delete(r.ents, j, j+1)
		}
	}
}

// reset forgets every range.
func (kr *knownRanges) reset() {
	if kr != nil {
		*kr = knownRanges{limit: kr.limit}
	}
}

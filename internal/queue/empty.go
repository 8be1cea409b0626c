package queue

import "bytes"

// maxEmptyRanges is how many empty scan ranges a partition's StateMachine
// remembers; a new one then takes the place of the oldest.
const maxEmptyRanges = 16

// emptyRanges remembers, for one partition, scan ranges [lo, hi) that held
// nothing when Apply last scanned them, so that the next scan of the same
// range is answered without a Pebble seek. The index scanned most often
// while empty is a receiver's own ready index ("r/<user>/"): every receive
// looks there for messages sent to its user, and most queues never hold
// one, yet each look costs a seek through the batch, the memtables and
// every level. Like applyMemo it is a memo, not a second state: memoWriter
// drops every range a Set writes into (a Delete cannot fill a range), and
// the StateMachine forgets them all whenever the state is replaced
// (Reset). A range it does not hold is scanned, and a nil emptyRanges
// holds none. Only the apply goroutine uses it.
type emptyRanges struct {
	r    [maxEmptyRanges]scanRange
	n    int // r[:n] are in use
	next int // the slot a new range takes once all are in use
}

// scanRange is [lo, hi); a nil hi has no upper bound.
type scanRange struct{ lo, hi []byte }

// has reports whether [lo, hi) held nothing when last scanned.
func (e *emptyRanges) has(lo, hi []byte) bool {
	if e == nil {
		return false
	}
	for i := range e.r[:e.n] {
		if bytes.Equal(e.r[i].lo, lo) && bytes.Equal(e.r[i].hi, hi) && (e.r[i].hi == nil) == (hi == nil) {
			return true
		}
	}
	return false
}

// add remembers that [lo, hi) holds nothing.
func (e *emptyRanges) add(lo, hi []byte) {
	if e == nil {
		return
	}
	r := scanRange{lo: bytes.Clone(lo), hi: bytes.Clone(hi)}
	if e.n < maxEmptyRanges {
		e.r[e.n] = r
		e.n++
		return
	}
	e.r[e.next] = r
	e.next = (e.next + 1) % maxEmptyRanges
}

// written forgets every range that holds key.
func (e *emptyRanges) written(key []byte) {
	if e == nil {
		return
	}
	for i := 0; i < e.n; {
		r := &e.r[i]
		if bytes.Compare(key, r.lo) >= 0 && (r.hi == nil || bytes.Compare(key, r.hi) < 0) {
			e.n--
			e.r[i], e.r[e.n] = e.r[e.n], scanRange{}
			e.next = 0
			continue
		}
		i++
	}
}

// reset forgets every range.
func (e *emptyRanges) reset() {
	if e != nil {
		*e = emptyRanges{}
	}
}

package audit

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Field bounds: Record clips longer fields (at a character boundary), so a
// client sending a huge user name cannot bloat the log.
const (
	maxShort  = 64  // Node, Kind, Outcome
	maxActor  = 128 // Actor, Remote
	maxTarget = 256
	maxDetail = 512
)

// bounded returns e with its time in UTC (no monotonic reading), every text
// field valid UTF-8 and clipped to its bound: the form an event keeps in
// the ring, in the store and on the wire, so the three compare equal.
func (e Event) bounded() Event {
	e.Time = e.Time.UTC()
	e.Node = clip(e.Node, maxShort)
	e.Kind = clip(e.Kind, maxShort)
	e.Outcome = clip(e.Outcome, maxShort)
	e.Actor = clip(e.Actor, maxActor)
	e.Remote = clip(e.Remote, maxActor)
	e.Target = clip(e.Target, maxTarget)
	e.Detail = clip(e.Detail, maxDetail)
	return e
}

// clip returns s as valid UTF-8 of at most n bytes.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// compare orders events by time, then by every other field, so that equal
// events are adjacent once sorted.
func compare(a, b Event) int {
	return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Node, b.Node), cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Outcome, b.Outcome), cmp.Compare(a.Actor, b.Actor), cmp.Compare(a.Remote, b.Remote),
		cmp.Compare(a.Target, b.Target), cmp.Compare(a.Detail, b.Detail))
}

// Merge sorts events oldest first, drops exact duplicates (the same event
// seen in a node's ring and in its store) and keeps the newest limit of
// them (all when limit <= 0). It reorders evs in place.
func Merge(evs []Event, limit int) []Event {
	slices.SortFunc(evs, compare)
	evs = slices.CompactFunc(evs, func(a, b Event) bool { return compare(a, b) == 0 })
	if limit > 0 && len(evs) > limit {
		evs = evs[len(evs)-limit:]
	}
	return evs
}

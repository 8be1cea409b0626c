package kv

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// compacted is the history_compacted error for a revision no longer kept.
func compacted(format string, args ...any) error {
	return errs.New(errs.HistoryCompacted, format, args...)
}

// History returns the kept versions of key, oldest first: puts with their
// values, deletes and expiries without.
func History(r state.Reader, key string) ([]Event, error) {
	lo := historyKeyPrefix(key)
	var out []Event
	var err error
	scanErr := r.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		var e Event
		e, err = decodeHistoryEntry(k, v, key, binary.BigEndian.Uint64(k[len(k)-8:]))
		e.Value = bytes.Clone(e.Value) // v is valid only during the call
		out = append(out, e)
		return err == nil
	})
	if scanErr != nil {
		return nil, scanErr
	}
	return out, err
}

// GetAt reads key as it was at revision rev of its partition: the newest
// kept version written at or before rev. A key that did not exist then (or
// was deleted) is errs.NotFound; a revision above the partition's is
// errs.Invalid; a revision older than what is kept of the key is
// errs.HistoryCompacted (told apart from "did not exist" by the oldest
// kept version: a creation, version 1, means nothing older was dropped).
func GetAt(r state.Reader, key string, rev uint64) (Item, error) {
	cur, err := Revision(r)
	if err != nil {
		return Item{}, err
	}
	if rev > cur {
		return Item{}, errs.New(errs.Invalid, "revision %d is ahead of the key's partition, at revision %d", rev, cur)
	}
	hist, err := History(r, key)
	if err != nil {
		return Item{}, err
	}
	var at *Event
	for i := range hist {
		if hist[i].Revision <= rev {
			at = &hist[i]
		}
	}
	if at == nil {
		// Older versions were dropped when the revision is beyond the watch
		// log, or the oldest kept version is not the key's creation.
		if rev < firstKept(cur) || len(hist) > 0 && (hist[0].Type != EventPut || hist[0].Version != 1) {
			return Item{}, compacted("revision %d of %q is no longer kept; the oldest kept is %d", rev, key, oldestRev(hist, cur))
		}
		return Item{}, errs.New(errs.NotFound, "key not found at revision %d", rev)
	}
	if at.Type != EventPut {
		return Item{}, errs.New(errs.NotFound, "key not found at revision %d (%s at revision %d)", rev, at.Type, at.Revision)
	}
	return Item{Value: at.Value, Version: at.Version, ModifiedMs: at.ModifiedMs, Revision: at.Revision}, nil
}

func oldestRev(hist []Event, cur uint64) uint64 {
	if len(hist) > 0 {
		return hist[0].Revision
	}
	return firstKept(cur)
}

// firstKept is the oldest revision the watch log names when the partition
// is at revision cur.
func firstKept(cur uint64) uint64 {
	if cur > LogKeep {
		return cur - LogKeep + 1
	}
	return 1
}

// Match selects the keys a watch wants: one key, or every key with a
// prefix (all keys for an empty prefix).
type Match struct {
	Key    string
	Prefix string
}

// Matches reports whether key is one m selects.
func (m Match) Matches(key string) bool {
	if m.Key != "" {
		return key == m.Key
	}
	return len(key) >= len(m.Prefix) && key[:len(m.Prefix)] == m.Prefix
}

// maxScanRevisions bounds the revisions one EventsAfter call examines.
const maxScanRevisions = 4096

// EventsAfter reads a partition's events after revision after that m
// selects, in revision order, whole revisions only, stopping once it has
// limit events or examined maxScanRevisions revisions. upTo is the last
// revision examined: the caller's next after (after itself when nothing is
// new, or when after is ahead of the partition). When after is older than
// what is kept, or an event it needs was dropped from its key's history,
// the error is errs.HistoryCompacted naming the partition's revision.
func EventsAfter(r state.Reader, after uint64, m Match, limit int) (events []Event, upTo uint64, err error) {
	cur, err := Revision(r)
	if err != nil {
		return nil, 0, err
	}
	if after >= cur {
		return nil, after, nil
	}
	if after+1 < firstKept(cur) {
		return nil, 0, compacted("revision %d is no longer kept; the partition is at revision %d", after, cur)
	}
	end := min(cur, after+maxScanRevisions)
	upTo = after
	var ferr error
	scanErr := r.Scan(logKey(after+1), logKey(end+1), func(k, v []byte) bool {
		rev := binary.BigEndian.Uint64(k[len(logPrefix):])
		var evs []Event
		if evs, ferr = revisionEvents(r, rev, v, m); ferr != nil {
			return false
		}
		if len(events) > 0 && len(events)+len(evs) > limit {
			return false
		}
		events = append(events, evs...)
		upTo = rev
		return len(events) < limit
	})
	if scanErr != nil {
		return nil, 0, scanErr
	}
	if ferr != nil {
		return nil, 0, ferr
	}
	if upTo == after && len(events) == 0 && end > after && limit > 0 {
		// Every examined revision was skipped: the log has a hole, which a
		// lagging snapshot cannot explain. Report rather than loop.
		if _, found, err := r.Get(logKey(after + 1)); err == nil && !found {
			return nil, 0, fmt.Errorf("kv: watch log misses revision %d (partition at %d)", after+1, cur)
		}
	}
	return events, upTo, nil
}

// revisionEvents returns the events m selects of revision rev, whose log
// entry is v.
func revisionEvents(r state.Reader, rev uint64, v []byte, m Match) ([]Event, error) {
	keys, err := decodeLogEntry(v)
	if err != nil {
		return nil, err
	}
	var out []Event
	for _, key := range keys {
		if !m.Matches(key) {
			continue
		}
		hk := historyKey(key, rev)
		hv, found, err := r.Get(hk)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, compacted("revision %d of %q is no longer kept (the key changed more than its history keeps since)", rev, key)
		}
		e, err := decodeHistoryEntry(hk, hv, key, rev)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

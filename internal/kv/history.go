package kv

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/state"
)

// Retention defaults.
const (
	// DefaultHistory is how many versions of each key are kept (the
	// current one included) when the command does not say.
	DefaultHistory = 10
	// MaxHistory bounds the versions kept per key.
	MaxHistory = 1000
	// LogKeep is how many of a partition's latest revisions the watch log
	// names. A watch resumes after revision A only when A+1 is among them
	// and every event it needs is still in its key's history.
	LogKeep = 100_000
	// Window is how many of a partition's latest revisions keep every
	// version they wrote, however many versions Keep allows per key: a
	// live watch that falls a little behind a key written in a burst, and
	// any resume within Window revisions, never finds its events gone.
	Window = 1024
)

// EventType says what a revision did to a key.
type EventType string

// Event types.
const (
	EventPut    EventType = "put"
	EventDelete EventType = "delete"
	EventExpire EventType = "expire" // the key's TTL or lease ran out
)

// Stored kinds of history entries.
const (
	kindPut    byte = 'P'
	kindDelete byte = 'D'
	kindExpire byte = 'E'
)

func eventType(kind byte) EventType {
	switch kind {
	case kindDelete:
		return EventDelete
	case kindExpire:
		return EventExpire
	default:
		return EventPut
	}
}

// Event is one change of one key at one revision of its partition. A put's
// Value is the value written; a delete's or expiry's Version is the version
// removed, and it has no value.
type Event struct {
	Revision   uint64
	Type       EventType
	Key        string
	Version    uint64
	ModifiedMs int64
	Value      []byte
}

// historyEntry encodes one version of a key: kind, version, modified ms,
// value.
func historyEntry(kind byte, version uint64, modifiedMs int64, value []byte) []byte {
	b := make([]byte, 17, 17+len(value))
	b[0] = kind
	binary.BigEndian.PutUint64(b[1:], version)
	binary.BigEndian.PutUint64(b[9:], uint64(modifiedMs))
	return append(b, value...)
}

func decodeHistoryEntry(k, v []byte, key string, rev uint64) (Event, error) {
	if len(v) < 17 || (v[0] != kindPut && v[0] != kindDelete && v[0] != kindExpire) {
		return Event{}, fmt.Errorf("kv: corrupt history entry under %q", k)
	}
	return Event{
		Revision:   rev,
		Type:       eventType(v[0]),
		Key:        key,
		Version:    binary.BigEndian.Uint64(v[1:]),
		ModifiedMs: int64(binary.BigEndian.Uint64(v[9:])),
		Value:      v[17:],
	}, nil
}

// readU64 reads an 8-byte counter, 0 when absent.
func readU64(r state.Reader, k string) (uint64, error) {
	v, found, err := r.Get([]byte(k))
	if err != nil || !found {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("kv: corrupt counter %q", k)
	}
	return binary.BigEndian.Uint64(v), nil
}

// Revision returns the partition's kv revision: how many revisions its
// writes have made, 0 before the first.
func Revision(r state.Reader) (uint64, error) { return readU64(r, revisionKey) }

// revWriter is one revision in the making: the key writes of one command.
// The revision is taken at the first write, so a command that writes
// nothing makes no revision; finish records it in the watch log. It reads
// the revision, the records' headers and the history it trims through the
// partition's applyCache, and keeps that cache exact: every write of them
// goes through here.
type revWriter struct {
	w    state.Writer
	c    *applyCache
	meta state.Meta
	keep int
	rev  uint64
	keys []string
}

func newRevWriter(w state.Writer, c *applyCache, meta state.Meta, keep uint64) *revWriter {
	k := int(min(keep, MaxHistory))
	if k == 0 {
		k = DefaultHistory
	}
	return &revWriter{w: w, c: c, meta: meta, keep: k}
}

// header returns key's record header, found false when there is none.
func (x *revWriter) header(key string) (header, bool, error) {
	ks, err := x.c.keyState(x.w, key)
	if err != nil {
		return header{}, false, err
	}
	return ks.h, ks.found, nil
}

// revision returns the revision of this command's writes.
func (x *revWriter) revision() (uint64, error) {
	if x.rev == 0 {
		if !x.c.revKnown {
			cur, err := Revision(x.w)
			if err != nil {
				return 0, err
			}
			x.c.rev, x.c.revKnown = cur, true
		}
		x.rev = x.c.rev + 1
	}
	return x.rev, nil
}

// set stores value under key with header nh (its modRev filled in here),
// replacing the record old (found says whether there was one): the
// record, its TTL and lease indexes and a history entry.
func (x *revWriter) set(key string, old header, found bool, nh header, value []byte) (header, error) {
	rev, err := x.revision()
	if err != nil {
		return header{}, err
	}
	nh.modRev = rev
	if found {
		if err := x.unindex(key, old, nh); err != nil {
			return header{}, err
		}
	}
	if nh.expiresMs != 0 {
		if err := x.w.Set(expiryKey(nh.expiresMs, key), nil); err != nil {
			return header{}, err
		}
	}
	if nh.lease != 0 {
		if err := x.w.Set(attachKey(nh.lease, key), nil); err != nil {
			return header{}, err
		}
	}
	if err := x.setRecord(key, nh, true, encodeRecord(nh, value)); err != nil {
		return header{}, fmt.Errorf("kv: put %q: %w", key, err)
	}
	return nh, x.history(key, historyEntry(kindPut, nh.version, nh.modifiedMs, value))
}

// remove deletes key's record old; kind says why (delete or expire).
func (x *revWriter) remove(key string, old header, kind byte) error {
	if _, err := x.revision(); err != nil {
		return err
	}
	if err := x.unindex(key, old, header{}); err != nil {
		return err
	}
	if err := x.setRecord(key, header{}, false, nil); err != nil {
		return fmt.Errorf("kv: delete %q: %w", key, err)
	}
	return x.history(key, historyEntry(kind, old.version, x.meta.TimeMs, nil))
}

// setRecord stores key's record rec with header h, or deletes it when not
// found, in the state and the cache.
func (x *revWriter) setRecord(key string, h header, found bool, rec []byte) error {
	ks, err := x.c.keyState(x.w, key)
	if err != nil {
		return err
	}
	if found {
		err = x.w.Set(dataKey(key), rec)
	} else {
		err = x.w.Delete(dataKey(key))
	}
	if err != nil {
		x.c.forget(key)
		return err
	}
	ks.h, ks.found = h, found
	return nil
}

// unindex drops old's TTL and lease index entries that nh does not keep.
func (x *revWriter) unindex(key string, old, nh header) error {
	if old.expiresMs != 0 && old.expiresMs != nh.expiresMs {
		if err := x.w.Delete(expiryKey(old.expiresMs, key)); err != nil {
			return err
		}
	}
	if old.lease != 0 && old.lease != nh.lease {
		if err := x.w.Delete(attachKey(old.lease, key)); err != nil {
			return err
		}
	}
	return nil
}

// history adds key's entry at this revision and drops its versions beyond
// the kept count that are older than Window revisions.
func (x *revWriter) history(key string, entry []byte) error {
	x.keys = append(x.keys, key)
	ks, err := x.c.keyState(x.w, key)
	if err != nil {
		return err
	}
	revs, err := x.c.historyRevs(x.w, key, ks)
	if err != nil {
		return err
	}
	if err := x.w.Set(historyKey(key, x.rev), entry); err != nil {
		x.c.forget(key)
		return err
	}
	if n := len(revs); n == 0 || revs[n-1] != x.rev { // a transaction may write a key twice
		revs = append(revs, x.rev)
		x.c.keys.Charge(8)
	}
	drop := 0
	for ; drop < len(revs)-x.keep && revs[drop]+Window <= x.rev; drop++ {
		if err := x.w.Delete(historyKey(key, revs[drop])); err != nil {
			x.c.forget(key)
			return err
		}
	}
	ks.revs = revs[drop:]
	return nil
}

// finish records the revision (if the command wrote anything) in the
// watch log and drops the log's oldest revision beyond LogKeep, with the
// whole history of keys that were deleted by then.
func (x *revWriter) finish() error {
	if x.rev == 0 {
		return nil
	}
	// Every command that writes rewrites it: stored lazily, once a batch.
	if err := state.SetLatest(x.w, []byte(revisionKey), u64(x.rev)); err != nil {
		x.c.revKnown = false
		return err
	}
	x.c.rev = x.rev
	var entry []byte
	entry = binary.AppendUvarint(entry, uint64(len(x.keys)))
	for _, k := range x.keys {
		entry = binary.AppendUvarint(entry, uint64(len(k)))
		entry = append(entry, k...)
	}
	if err := x.w.Set(logKey(x.rev), entry); err != nil {
		return err
	}
	if x.rev <= LogKeep {
		return nil
	}
	return x.dropLogEntry(x.rev - LogKeep)
}

// dropLogEntry forgets revision rev from the watch log, and the history of
// each of its keys that is deleted and was not written after rev.
func (x *revWriter) dropLogEntry(rev uint64) error {
	w := x.w
	v, found, err := w.Get(logKey(rev))
	if err != nil || !found {
		return err
	}
	keys, err := decodeLogEntry(v)
	if err != nil {
		return err
	}
	for _, key := range keys {
		if err := x.dropDeletedHistory(key, rev); err != nil {
			return err
		}
	}
	return w.Delete(logKey(rev))
}

// dropDeletedHistory deletes key's whole history if the key does not exist
// and was last written at or before rev.
func (x *revWriter) dropDeletedHistory(key string, rev uint64) error {
	var exists bool
	var err error
	if ks := x.c.peek(key); ks != nil {
		exists = ks.found
	} else {
		_, exists, err = x.w.Get(dataKey(key))
	}
	if err != nil || exists {
		return err
	}
	revs, err := readHistoryRevs(x.w, key)
	if err != nil || len(revs) == 0 || revs[len(revs)-1] > rev {
		return err
	}
	if ks := x.c.peek(key); ks != nil {
		ks.revs, ks.revsKnown = nil, true // absent, and now without history
	}
	for _, r := range revs {
		if err := x.w.Delete(historyKey(key, r)); err != nil {
			return err
		}
	}
	return nil
}

func decodeLogEntry(v []byte) ([]string, error) {
	n, rest, err := readUvarint(v)
	if err != nil || n > uint64(len(rest)) {
		return nil, fmt.Errorf("kv: corrupt watch log entry")
	}
	keys := make([]string, 0, n)
	for range n {
		var k string
		if k, rest, err = readKey(rest); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

package chat

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// RetentionProtocol is the internal protocol (compat.Protocol) that
// introduced per-room retention (the Settings bits SetRetentionDays and
// SetRetentionMessages) and legal holds (LegalHold). Features new since
// protocol 2 gate on 2: a cluster that speaks 2 applies them.
const RetentionProtocol = 2

// Bounds of a room's own retention, checked by the Service and by Apply.
const (
	// RetentionForever, as retention_days, keeps a room's history for
	// ever whatever the cluster's --history-retention; as
	// retention_messages it is the same as 0 (there is no cluster default
	// by count).
	RetentionForever = -1
	// MaxRetentionDays is the longest retention_days (100 years).
	MaxRetentionDays = 100 * 365
	// MaxRetentionMessages is the largest retention_messages.
	MaxRetentionMessages = 100_000_000
	msPerDay             = 24 * 60 * 60 * 1000
)

// roomRetention is a room's own retention and the bookkeeping its message
// count needs. The zero value follows the cluster default.
type roomRetention struct {
	// days is how long events are kept: 0 the cluster default,
	// RetentionForever for ever, otherwise that many days.
	days int64
	// messages keeps the newest messages (and whispers) of the room: 0 or
	// RetentionForever no limit, otherwise that many.
	messages int64
	// While messages > 0, counted is the number of messages with a seq in
	// [firstRetained, countedTo): Compact counts the events after
	// countedTo, within its budget, before it removes any by count.
	countedTo, counted uint64
}

// appendRetention appends varint days, varint messages, uvarint countedTo
// and uvarint counted.
func appendRetention(b []byte, r roomRetention) []byte {
	b = binary.AppendVarint(binary.AppendVarint(b, r.days), r.messages)
	return binary.AppendUvarint(binary.AppendUvarint(b, r.countedTo), r.counted)
}

// retention reads what appendRetention wrote.
func (d *decoder) retention() roomRetention {
	r := roomRetention{days: d.varint(), messages: d.varint(), countedTo: d.uvarint(), counted: d.uvarint()}
	switch {
	case d.err != nil:
	case r == roomRetention{}:
		d.fail("empty retention")
	case r.days < RetentionForever || r.days > MaxRetentionDays || r.messages < RetentionForever || r.messages > MaxRetentionMessages:
		d.fail("retention out of range")
	case r.messages <= 0 && (r.countedTo != 0 || r.counted != 0):
		d.fail("message count without a retention by count")
	}
	return r
}

// setMessageLimit sets the room's retention by count to n. Turning it on
// starts counting from the first retained seq (Compact counts); turning it
// off drops the count.
func (r *roomRetention) setMessageLimit(n int64, firstRetained uint64) {
	switch {
	case n <= 0:
		r.countedTo, r.counted = 0, 0
	case r.messages <= 0:
		r.countedTo, r.counted = firstRetained, 0
	}
	r.messages = n
}

// ageMs returns how long the room keeps events given the cluster's
// default (0: for ever).
func (r roomRetention) ageMs(defaultMs uint64) uint64 {
	switch {
	case r.days > 0:
		return uint64(r.days) * msPerDay
	case r.days < 0:
		return 0
	}
	return defaultMs
}

// ageCutoff returns the time below which events are old at now under a
// retention of retentionMs; ok is false when none is (0 keeps them for
// ever, and a retention reaching before the start of time has no cutoff).
func ageCutoff(now int64, retentionMs uint64) (cutoff int64, ok bool) {
	if retentionMs == 0 || retentionMs > math.MaxInt64 || now < math.MinInt64+int64(retentionMs) {
		return 0, false
	}
	return now - int64(retentionMs), true
}

// isMessageKind reports whether a stored event kind is a message or a
// whisper: what a retention by count counts.
func isMessageKind(kind byte) bool {
	return kind == evPost || kind == evMessage || kind == evWhisper
}

// compaction is one Compact command at work: its time, the cluster's
// default retention, and its budget, spent one unit per key deleted and
// per event read to count messages.
type compaction struct {
	w         state.Writer
	now       int64
	defaultMs uint64
	budget    uint64
	used      uint64 // keys deleted and events counted so far
	deleted   uint64 // keys deleted
	more      bool   // the budget ran out
}

// applyCompact deletes, room by room in key order, the events below each
// room's firstRetained (left by deletion), then those its retention
// expires, raising firstRetained past them, with the thread, pin, mention
// and moderation log keys of those events. A room's retention is its own
// (roomRetention) or the command's RetentionMs, by age against the
// command's time, and by count; a room under legal hold loses nothing but
// what deletion left. Times never decrease along a room's seqs, and a
// count keeps the newest messages, so what expires is a prefix. At most
// about Budget keys are deleted and events counted (a message's derived
// keys go with it); More in the result says the proposer should run it
// again.
func applyCompact(w state.Writer, meta state.Meta, c Compact) ([]byte, error) {
	cp := &compaction{w: w, now: meta.TimeMs, defaultMs: c.RetentionMs, budget: c.Budget}
	if cp.budget == 0 {
		cp.budget = DefaultCompactBudget
	}
	err := forEachRoom(w, func(room string, rec *roomRecord) (bool, error) {
		if err := cp.room(room, rec); err != nil {
			return false, err
		}
		return !cp.more, nil
	})
	if err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: opCompact, n: cp.deleted, more: cp.more}), nil
}

// room compacts one room and stores its record when it changed.
func (cp *compaction) room(room string, rec *roomRecord) error {
	s := &rec.settings
	before := s.retention
	cutoff, byAge := ageCutoff(cp.now, s.retention.ageMs(cp.defaultMs))
	var excess uint64 // messages beyond the count to remove
	if s.retention.messages > 0 && !s.legalHold {
		done, err := cp.count(room, rec)
		if err != nil {
			return err
		}
		if done && s.retention.counted > uint64(s.retention.messages) {
			excess = s.retention.counted - uint64(s.retention.messages)
		}
	}
	if s.legalHold {
		byAge = false
	}
	first, err := cp.expire(room, rec, cutoff, byAge, excess)
	if err != nil {
		return err
	}
	if !cp.more {
		probe := *rec
		probe.firstRetained = first
		if err := cp.files(room, &probe); err != nil { // apply_file.go
			return err
		}
	}
	if r := &s.retention; r.messages > 0 && r.countedTo < first {
		r.countedTo, r.counted = first, 0
	}
	if first != rec.firstRetained || s.retention != before {
		rec.firstRetained = first
		return setRoom(cp.w, room, rec)
	}
	return nil
}

// count counts the messages of room after its count's cursor, one budget
// unit per event read, and reports whether it reached the room's last
// event.
func (cp *compaction) count(room string, rec *roomRecord) (bool, error) {
	r := &rec.settings.retention
	if r.countedTo < rec.firstRetained {
		r.countedTo, r.counted = rec.firstRetained, 0
	}
	lo := eventsPrefix(room)
	var err error
	scanErr := cp.w.Scan(eventKey(room, r.countedTo), state.PrefixEnd(lo), func(k, v []byte) bool {
		if cp.used >= cp.budget {
			cp.more = true
			return false
		}
		var seq uint64
		if seq, err = seqOfEventKey(room, k); err != nil {
			return false
		}
		if len(v) == 0 {
			err = fmt.Errorf("chat: empty event under %q", k)
			return false
		}
		cp.used++
		if isMessageKind(v[0]) {
			r.counted++
		}
		r.countedTo = seq + 1
		return true
	})
	if scanErr != nil {
		return false, fmt.Errorf("chat: scan events of %q: %w", room, scanErr)
	}
	return r.countedTo > rec.lastSeq, err
}

// expire deletes room's events below firstRetained and then, oldest
// first, those older than cutoff (when byAge) and, while excess messages
// remain, those before the oldest message kept; it returns the new first
// retained seq.
func (cp *compaction) expire(room string, rec *roomRecord, cutoff int64, byAge bool, excess uint64) (uint64, error) {
	r := &rec.settings.retention
	byCount := excess > 0
	var keys [][]byte
	first := rec.firstRetained
	var err error
	lo := eventsPrefix(room)
	scanErr := cp.w.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		if len(k) != len(lo)+8 {
			err = fmt.Errorf("chat: corrupt event key %q", k)
			return false
		}
		seq := binary.BigEndian.Uint64(k[len(lo):])
		retained := seq >= first
		if retained {
			if !byAge && !byCount {
				return false
			}
			var ts int64
			if ts, err = eventTs(k, v); err != nil {
				return false
			}
			old := byAge && ts < cutoff
			counted := byCount && (excess > 0 || !isMessageKind(v[0]))
			if !old && !counted {
				return false
			}
		}
		if cp.used+uint64(len(keys)) >= cp.budget {
			cp.more = true
			return false
		}
		var ev *eventRecord
		if ev, err = decodeEventRecord(k, v); err != nil {
			return false
		}
		if retained {
			first = seq + 1
			if ev.isMessage() {
				excess -= min(excess, 1)
				if seq < r.countedTo {
					r.counted--
				}
			}
		}
		keys = append(keys, append([]byte(nil), k...))
		keys = append(keys, derivedKeys(room, seq, ev)...)
		return true
	})
	if scanErr != nil {
		return 0, fmt.Errorf("chat: scan events of %q: %w", room, scanErr)
	}
	if err != nil {
		return 0, err
	}
	for _, k := range keys {
		if err := cp.w.Delete(k); err != nil {
			return 0, fmt.Errorf("chat: delete %q: %w", k, err)
		}
	}
	cp.used += uint64(len(keys))
	cp.deleted += uint64(len(keys))
	return first, nil
}

// applyRetentionSettings applies the retention fields of a Settings
// command to rec; a refusal when one is out of range.
func applyRetentionSettings(rec *roomRecord, c Settings) []byte {
	r := &rec.settings.retention
	if c.Set&SetRetentionDays != 0 {
		if c.RetentionDays < RetentionForever || c.RetentionDays > MaxRetentionDays {
			return refuse(statusInvalid, "retention_days must be -1 (for ever), 0 (the cluster default) or 1 to %d", MaxRetentionDays)
		}
		r.days = c.RetentionDays
	}
	if c.Set&SetRetentionMessages != 0 {
		if c.RetentionMessages < RetentionForever || c.RetentionMessages > MaxRetentionMessages {
			return refuse(statusInvalid, "retention_messages must be -1 or 0 (no limit) or 1 to %d", MaxRetentionMessages)
		}
		r.setMessageLimit(c.RetentionMessages, rec.firstRetained)
	}
	return nil
}

// retentionRequest checks the retention fields of req and sets them in c.
func retentionRequest(c *Settings, req SettingsRequest) error {
	if d := req.RetentionDays; d != nil {
		if *d < RetentionForever || *d > MaxRetentionDays {
			return errs.New(errs.Invalid, "retention_days must be -1 (for ever), 0 (the cluster default) or 1 to %d, got %d", MaxRetentionDays, *d)
		}
		c.Set, c.RetentionDays = c.Set|SetRetentionDays, *d
	}
	if n := req.RetentionMessages; n != nil {
		if *n < RetentionForever || *n > MaxRetentionMessages {
			return errs.New(errs.Invalid, "retention_messages must be -1 or 0 (no limit) or 1 to %d, got %d", MaxRetentionMessages, *n)
		}
		c.Set, c.RetentionMessages = c.Set|SetRetentionMessages, *n
	}
	return nil
}

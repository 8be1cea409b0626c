package link

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/wire"
)

// State keys, relative to the partition. Every key starts with "l/".
const (
	prefixLink  = "l/c/" // + code -> link record
	prefixUser  = "l/u/" // + uvarint len(owner) + owner + ^created ms (8 bytes BE) + code -> ""
	prefixStats = "l/s/" // + uvarint len(code) + code + kind + name -> counts (stats.go)
)

// Record formats, the first byte of every stored record. Format 1 (before
// the lifecycle fields) is still read; every write is format 2.
const (
	recordFormat1 byte = 1
	recordFormat2 byte = 2
)

// recordHeaderLen is the fixed part of a format 1 record: format, created
// ms, hits.
const recordHeaderLen = 17

// Flag bits of a format 2 record.
const recordDisabled byte = 1

func linkKey(code string) []byte {
	return append([]byte(prefixLink), code...)
}

// ownerPrefix is the prefix of every index key of the lowercased owner; the
// length prefix keeps "ab" apart from "abc".
func ownerPrefix(lowerOwner string) []byte {
	b := make([]byte, 0, len(prefixUser)+binary.MaxVarintLen64+len(lowerOwner))
	b = append(b, prefixUser...)
	return wire.AppendString(b, lowerOwner)
}

// ownerKey indexes a link under its owner, newest first.
func ownerKey(lowerOwner string, createdMs int64, code string) []byte {
	b := ownerPrefix(lowerOwner)
	b = binary.BigEndian.AppendUint64(b, ^uint64(createdMs))
	return append(b, code...)
}

// record is a stored link.
type record struct {
	createdMs int64
	hits      uint64 // every counted visit, bots included
	bots      uint64 // the visits flagged as bots
	createdBy string
	url       string
	settings
	referrers uint64 // distinct referrer hosts stored (stats.go), at most MaxReferrers
}

// settings are a link's lifecycle fields, set at creation and by Update.
type settings struct {
	expiresMs int64  // Unix ms after which it stops redirecting; 0: never
	maxVisits uint64 // visits after which it stops redirecting; 0: no limit
	status    uint16 // redirect status: 301, 302, 307 or 308
	disabled  bool
	tags      []string // folded, sorted, unique
}

// Encoding (format 2): format, created ms (8 bytes BE), hits (8 bytes BE),
// bots, expires ms, max visits, status, referrers (uvarints), flags,
// uvarint len(tags), each tag as uvarint len + bytes, uvarint len(createdBy),
// createdBy, url (the rest).
func encodeRecord(r record) []byte {
	n := recordHeaderLen + 6*binary.MaxVarintLen64 + 2 + len(r.createdBy) + len(r.url)
	for _, t := range r.tags {
		n += binary.MaxVarintLen64 + len(t)
	}
	b := make([]byte, 0, n)
	b = append(b, recordFormat2)
	b = binary.BigEndian.AppendUint64(b, uint64(r.createdMs))
	b = binary.BigEndian.AppendUint64(b, r.hits)
	b = binary.AppendUvarint(b, r.bots)
	b = binary.AppendUvarint(b, uint64(r.expiresMs))
	b = binary.AppendUvarint(b, r.maxVisits)
	b = binary.AppendUvarint(b, uint64(r.status))
	b = binary.AppendUvarint(b, r.referrers)
	var flags byte
	if r.disabled {
		flags |= recordDisabled
	}
	b = append(b, flags)
	b = appendStrings(b, r.tags)
	b = wire.AppendString(b, r.createdBy)
	return append(b, r.url...)
}

func decodeRecord(rec []byte) (record, error) {
	if len(rec) < recordHeaderLen || (rec[0] != recordFormat1 && rec[0] != recordFormat2) {
		return record{}, fmt.Errorf("link: corrupt record (%d bytes)", len(rec))
	}
	r := record{
		createdMs: int64(binary.BigEndian.Uint64(rec[1:])),
		hits:      binary.BigEndian.Uint64(rec[9:]),
		settings:  settings{status: DefaultStatus},
	}
	rest := rec[recordHeaderLen:]
	if rec[0] == recordFormat2 {
		var err error
		if rest, err = r.decodeFormat2(rest); err != nil {
			return record{}, fmt.Errorf("link: corrupt record: %w", err)
		}
	}
	by, rest, err := readString(rest)
	if err != nil {
		return record{}, fmt.Errorf("link: corrupt record: %w", err)
	}
	if len(rest) == 0 {
		return record{}, fmt.Errorf("link: corrupt record: empty url")
	}
	r.createdBy, r.url = by, string(rest)
	return r, nil
}

// decodeFormat2 reads the fields format 2 adds after the header.
func (r *record) decodeFormat2(b []byte) ([]byte, error) {
	var vals [5]uint64
	var err error
	for i := range vals {
		if vals[i], b, err = readUvarint(b); err != nil {
			return nil, err
		}
	}
	if len(b) < 1 || b[0]&^recordDisabled != 0 || vals[3] > 999 {
		return nil, fmt.Errorf("%w: bad flags or status", errMalformed)
	}
	r.bots, r.expiresMs, r.maxVisits, r.status, r.referrers = vals[0], int64(vals[1]), vals[2], uint16(vals[3]), vals[4]
	r.disabled = b[0]&recordDisabled != 0
	r.tags, b, err = readStrings(b[1:])
	return b, err
}

// appendStrings appends uvarint len(list) and each string length-prefixed.
func appendStrings(b []byte, list []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(list)))
	for _, s := range list {
		b = wire.AppendString(b, s)
	}
	return b
}

// readStrings reads what appendStrings wrote: non-empty strings, at most
// one per two remaining bytes (which bounds the allocation).
func readStrings(b []byte) ([]string, []byte, error) {
	n, b, err := readUvarint(b)
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(b)/2) {
		return nil, nil, fmt.Errorf("%w: %d strings in %d bytes", errMalformed, n, len(b))
	}
	if n == 0 {
		return nil, b, nil
	}
	out := make([]string, 0, n)
	for range n {
		var s string
		if s, b, err = readString(b); err != nil {
			return nil, nil, err
		}
		out = append(out, s)
	}
	return out, b, nil
}

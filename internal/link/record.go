package link

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/wire"
)

// State keys, relative to the partition. Every key starts with "l/".
const (
	prefixLink = "l/c/" // + code -> link record
	prefixUser = "l/u/" // + uvarint len(owner) + owner + ^created ms (8 bytes BE) + code -> ""
)

// recordFormat is the first byte of every stored record, so a later format
// can be told apart.
const recordFormat byte = 1

// recordHeaderLen is the fixed part of a record: format, created ms, hits.
const recordHeaderLen = 17

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
	hits      uint64
	createdBy string
	url       string
}

// Encoding: format, created ms (8 bytes BE), hits (8 bytes BE), uvarint
// len(createdBy), createdBy, url (the rest).
func encodeRecord(r record) []byte {
	b := make([]byte, 0, recordHeaderLen+binary.MaxVarintLen64+len(r.createdBy)+len(r.url))
	b = append(b, recordFormat)
	b = binary.BigEndian.AppendUint64(b, uint64(r.createdMs))
	b = binary.BigEndian.AppendUint64(b, r.hits)
	b = wire.AppendString(b, r.createdBy)
	return append(b, r.url...)
}

func decodeRecord(rec []byte) (record, error) {
	if len(rec) < recordHeaderLen || rec[0] != recordFormat {
		return record{}, fmt.Errorf("link: corrupt record (%d bytes)", len(rec))
	}
	r := record{
		createdMs: int64(binary.BigEndian.Uint64(rec[1:])),
		hits:      binary.BigEndian.Uint64(rec[9:]),
	}
	by, rest, err := readString(rec[recordHeaderLen:])
	if err != nil {
		return record{}, fmt.Errorf("link: corrupt record: %w", err)
	}
	if len(rest) == 0 {
		return record{}, fmt.Errorf("link: corrupt record: empty url")
	}
	r.createdBy, r.url = by, string(rest)
	return r, nil
}

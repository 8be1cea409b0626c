package kv

import (
	"encoding/binary"
	"fmt"
)

// State keys, relative to the partition. A key's record lives under
// dataPrefix; everything else the store keeps lives under metaPrefix, so a
// listing of "k/" sees records only.
const (
	dataPrefix     = "k/"     // + key -> record
	metaPrefix     = "k!"     // the store's bookkeeping
	revisionKey    = "k!rev"  // the partition's kv revision, 8 bytes BE
	historyPrefix  = "k!h/"   // + uvarint len(key) + key + revision (8 BE) -> history entry
	logPrefix      = "k!w/"   // + revision (8 BE) -> the keys written at that revision
	expiryPrefix   = "k!x/"   // + expiry ms (8 BE) + key -> "" (keys with a TTL)
	leasePrefix    = "k!l/"   // + lease (8 BE) -> lease record
	attachPrefix   = "k!a/"   // + lease (8 BE) + key -> "" (keys attached to a lease)
	deadlinePrefix = "k!y/"   // + deadline ms (8 BE) + lease (8 BE) -> "" (leases by deadline)
	leaseSeqKey    = "k!lseq" // the partition's last lease sequence number, 8 bytes BE
)

// headerLen is the size of a record's original header: version and
// modified time. Records written since revisions existed set extendedBit in
// the version field and carry extLen more bytes: modification revision,
// expiry (Unix ms, 0 for none) and lease (0 for none).
const (
	headerLen   = 16
	extLen      = 24
	extendedBit = uint64(1) << 63
)

// dataKey returns the state key of the kv key.
func dataKey(key string) []byte {
	b := make([]byte, 0, len(dataPrefix)+len(key))
	return append(append(b, dataPrefix...), key...)
}

// header is the fixed part of a stored record.
type header struct {
	version    uint64
	modifiedMs int64
	modRev     uint64 // 0 for a record written before revisions
	expiresMs  int64  // 0: no TTL
	lease      uint64 // 0: no lease
}

// size is the encoded size of h.
func (h header) size() int {
	if h.modRev == 0 && h.expiresMs == 0 && h.lease == 0 {
		return headerLen
	}
	return headerLen + extLen
}

func encodeRecord(h header, value []byte) []byte {
	n := h.size()
	b := make([]byte, n, n+len(value))
	v := h.version
	if n > headerLen {
		v |= extendedBit
		binary.BigEndian.PutUint64(b[16:], h.modRev)
		binary.BigEndian.PutUint64(b[24:], uint64(h.expiresMs))
		binary.BigEndian.PutUint64(b[32:], h.lease)
	}
	binary.BigEndian.PutUint64(b, v)
	binary.BigEndian.PutUint64(b[8:], uint64(h.modifiedMs))
	return append(b, value...)
}

// decodeRecord reads the record stored under the state key k: its header
// and its value (aliasing rec).
func decodeRecord(k, rec []byte) (header, []byte, error) {
	if len(rec) < headerLen {
		return header{}, nil, fmt.Errorf("kv: corrupt record under %q: %d bytes", k, len(rec))
	}
	v := binary.BigEndian.Uint64(rec)
	h := header{version: v &^ extendedBit, modifiedMs: int64(binary.BigEndian.Uint64(rec[8:]))}
	n := headerLen
	if v&extendedBit != 0 {
		if len(rec) < headerLen+extLen {
			return header{}, nil, fmt.Errorf("kv: corrupt record under %q: %d bytes", k, len(rec))
		}
		h.modRev = binary.BigEndian.Uint64(rec[16:])
		h.expiresMs = int64(binary.BigEndian.Uint64(rec[24:]))
		h.lease = binary.BigEndian.Uint64(rec[32:])
		n += extLen
	}
	if h.version == 0 {
		return header{}, nil, fmt.Errorf("kv: corrupt record under %q: version 0", k)
	}
	return h, rec[n:], nil
}

// u64 returns v as 8 bytes, big endian.
func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// join concatenates state key parts.
func join(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// historyKeyPrefix is the prefix of key's history entries.
func historyKeyPrefix(key string) []byte {
	b := append([]byte(historyPrefix), binary.AppendUvarint(nil, uint64(len(key)))...)
	return append(b, key...)
}

func historyKey(key string, rev uint64) []byte { return join(historyKeyPrefix(key), u64(rev)) }

func logKey(rev uint64) []byte { return join([]byte(logPrefix), u64(rev)) }

func expiryKey(ms int64, key string) []byte {
	return join([]byte(expiryPrefix), u64(uint64(ms)), []byte(key))
}

func leaseKey(id uint64) []byte { return join([]byte(leasePrefix), u64(id)) }

func attachKey(id uint64, key string) []byte {
	return join([]byte(attachPrefix), u64(id), []byte(key))
}

func deadlineKey(ms int64, id uint64) []byte {
	return join([]byte(deadlinePrefix), u64(uint64(ms)), u64(id))
}

package kv

import (
	"encoding/binary"
	"fmt"
)

// dataPrefix is the prefix of every key's record in a partition's state.
const dataPrefix = "k/"

// headerLen is the size of a record's header: version and modified time.
const headerLen = 16

// dataKey returns the state key of the kv key.
func dataKey(key string) []byte {
	b := make([]byte, 0, len(dataPrefix)+len(key))
	return append(append(b, dataPrefix...), key...)
}

// header is the fixed part of a stored record.
type header struct {
	version    uint64
	modifiedMs int64
}

func encodeRecord(version uint64, modifiedMs int64, value []byte) []byte {
	b := make([]byte, headerLen, headerLen+len(value))
	binary.BigEndian.PutUint64(b, version)
	binary.BigEndian.PutUint64(b[8:], uint64(modifiedMs))
	return append(b, value...)
}

// decodeHeader reads the header of the record stored under the state key k.
func decodeHeader(k, rec []byte) (header, error) {
	if len(rec) < headerLen {
		return header{}, fmt.Errorf("kv: corrupt record under %q: %d bytes", k, len(rec))
	}
	h := header{
		version:    binary.BigEndian.Uint64(rec),
		modifiedMs: int64(binary.BigEndian.Uint64(rec[8:])),
	}
	if h.version == 0 {
		return header{}, fmt.Errorf("kv: corrupt record under %q: version 0", k)
	}
	return h, nil
}

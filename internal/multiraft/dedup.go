package multiraft

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/state"
)

// Keys starting with 0x00 in a partition's state belong to the engine; domain
// state machines use keys starting with a printable tag.
var (
	keyLastTime    = []byte("\x00time")   // last applied leader time, to keep time non-decreasing
	prefixDedup    = []byte("\x00dedup/") // id -> expiry(varint) result
	prefixDedupExp = []byte("\x00dexp/")  // expiry(8 bytes BE) id -> ""
)

// maxExpiredPerApply bounds the expired dedup records one Apply deletes, so a
// burst of expiries spreads over many commands.
const maxExpiredPerApply = 8

func dedupKey(id []byte) []byte {
	return append(append(make([]byte, 0, len(prefixDedup)+len(id)), prefixDedup...), id...)
}

func dedupExpKey(expiry int64, id []byte) []byte {
	k := make([]byte, 0, len(prefixDedupExp)+8+len(id))
	k = append(k, prefixDedupExp...)
	k = binary.BigEndian.AppendUint64(k, uint64(expiry))
	return append(k, id...)
}

// lookupDedup returns the recorded result of id if it was applied and has
// not expired at nowMs.
func lookupDedup(r state.Reader, id []byte, nowMs int64) ([]byte, bool, error) {
	v, ok, err := r.Get(dedupKey(id))
	if err != nil || !ok {
		return nil, false, err
	}
	exp, n := binary.Varint(v)
	if n <= 0 {
		return nil, false, fmt.Errorf("multiraft: corrupt dedup record")
	}
	if exp < nowMs {
		return nil, false, nil
	}
	return v[n:], true, nil
}

// recordDedup remembers id's result until nowMs+windowMs.
func recordDedup(w state.Writer, id []byte, nowMs, windowMs int64, result []byte) error {
	exp := nowMs + windowMs
	v := binary.AppendVarint(make([]byte, 0, 10+len(result)), exp)
	v = append(v, result...)
	if err := w.Set(dedupKey(id), v); err != nil {
		return err
	}
	return w.Set(dedupExpKey(exp, id), nil)
}

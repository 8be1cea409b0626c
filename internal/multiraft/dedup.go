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

// expireDedup deletes up to maxExpiredPerApply records that expired before
// nowMs. It is deterministic: it depends only on state and nowMs.
func expireDedup(w state.Writer, nowMs int64) error {
	hi := binary.BigEndian.AppendUint64(append([]byte(nil), prefixDedupExp...), uint64(nowMs))
	var expired [][]byte
	err := w.Scan(prefixDedupExp, hi, func(k, _ []byte) bool {
		expired = append(expired, append([]byte(nil), k...))
		return len(expired) < maxExpiredPerApply
	})
	if err != nil {
		return err
	}
	for _, k := range expired {
		id := k[len(prefixDedupExp)+8:]
		if err := w.Delete(dedupKey(id)); err != nil {
			return err
		}
		if err := w.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// clampTime returns max(stamped, last applied time) and records it, so times
// never go backwards within a partition even when leaders' clocks differ.
func clampTime(w state.Writer, stamped int64) (int64, error) {
	v, ok, err := w.Get(keyLastTime)
	if err != nil {
		return 0, err
	}
	if ok && len(v) == 8 {
		if last := int64(binary.BigEndian.Uint64(v)); last > stamped {
			stamped = last
		}
	}
	return stamped, w.Set(keyLastTime, binary.BigEndian.AppendUint64(nil, uint64(stamped)))
}

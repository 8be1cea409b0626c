package multiraft

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/parley-chat/parley/internal/state"
)

// Engine-reserved commands start with reservedTag, a byte no domain uses
// (domains are named by printable letters). The engine applies them itself,
// for every group alike, and never hands them to the group's state machine.
const (
	reservedTag = 0x00
	opChecksum  = 'V'
	// maxMarker bounds a marker id.
	maxMarker = 64
	// markersKept is how many recent markers each group remembers.
	markersKept = 8
)

var errBadChecksumResult = errors.New("multiraft: malformed checksum result")

// ChecksumCommand returns the command of a checksum marker. Proposed to a
// group like any command, it makes every replica, when it applies the
// marker, hash the group's state as of the marker's index (the state the
// entries before it left, seen through the apply batch) and remember
// (marker -> index, sum) in memory; MarkerChecksum reads it back. The
// marker changes nothing in the replicated state but the applied index and
// the last leader time, and is not de-duplicated, so the sum equals
// storage.DB.Checksum of a replica at rest at that index; a marker proposed
// twice (a retry) is applied twice, each time at its own index. Its result,
// from the leader's replica, is the index and sum (DecodeChecksumResult).
//
// Cost: one scan of the group's whole state on each replica's driver loop,
// which stalls that node's other groups for as long as the scan takes.
func ChecksumCommand(marker []byte) []byte {
	return append([]byte{reservedTag, opChecksum}, marker...)
}

// DecodeChecksumResult parses the result of a checksum marker.
func DecodeChecksumResult(b []byte) (index, sum uint64, err error) {
	if len(b) != 16 {
		return 0, 0, errBadChecksumResult
	}
	return binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:]), nil
}

// isChecksumCommand reports whether cmd is a checksum marker.
func isChecksumCommand(cmd []byte) bool {
	return len(cmd) >= 2 && cmd[0] == reservedTag && cmd[1] == opChecksum
}

// markerSum is what one replica computed at one marker.
type markerSum struct {
	marker     string
	index, sum uint64
}

// markerTable keeps each local replica's most recent marker sums. The loop
// writes it; any goroutine reads it.
type markerTable struct {
	mu      sync.Mutex
	byGroup map[uint64][]markerSum
}

func (t *markerTable) add(group uint64, m markerSum) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byGroup == nil {
		t.byGroup = map[uint64][]markerSum{}
	}
	l := append(t.byGroup[group], m)
	if len(l) > markersKept {
		l = append(l[:0], l[len(l)-markersKept:]...)
	}
	t.byGroup[group] = l
}

// MarkerChecksum returns the state sum the local replica of group computed
// when it applied the checksum marker at index; ok is false when it has not
// (yet), or skipped it by installing a snapshot past it, or forgot it (only
// the last few markers per group are kept, in memory).
func (e *Engine) MarkerChecksum(group uint64, marker []byte, index uint64) (sum uint64, ok bool) {
	e.markers.mu.Lock()
	defer e.markers.mu.Unlock()
	for _, m := range e.markers.byGroup[group] {
		if m.marker == string(marker) && m.index == index {
			return m.sum, true
		}
	}
	return 0, false
}

// applyChecksum applies a checksum marker at index: it hashes the group's
// state as every replica sees it at this index and records the sum.
func (e *Engine) applyChecksum(w state.Writer, g *group, index uint64, cmd []byte) ([]byte, error) {
	marker := cmd[2:]
	if len(marker) > maxMarker {
		return nil, nil // every replica ignores it alike
	}
	// The last applied time is otherwise written once per batch, and batch
	// boundaries differ between replicas: write it now so the hashed state
	// is the same everywhere.
	if err := w.Set(keyLastTime, binary.BigEndian.AppendUint64(nil, uint64(g.lastTimeMs))); err != nil {
		return nil, err
	}
	sum, err := StateSum(w)
	if err != nil {
		return nil, err
	}
	e.markers.add(g.id, markerSum{marker: string(marker), index: index, sum: sum})
	out := binary.BigEndian.AppendUint64(make([]byte, 0, 16), index)
	return binary.BigEndian.AppendUint64(out, sum), nil
}

// StateSum hashes a group's state: xxhash64 over the uvarint length and
// bytes of every key and value in key order, the same sum as
// storage.DB.Checksum.
func StateSum(r state.Reader) (uint64, error) {
	h := xxhash.New()
	var lenBuf [binary.MaxVarintLen64]byte
	write := func(b []byte) {
		_, _ = h.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(b)))])
		_, _ = h.Write(b)
	}
	err := r.Scan(nil, nil, func(k, v []byte) bool {
		write(k)
		write(v)
		return true
	})
	return h.Sum64(), err
}

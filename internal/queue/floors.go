package queue

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/state"
)

// ranks is the number of ready-index ranks (priorities).
const ranks = MaxPriority + 1

// allRanks has a bit for every rank.
const allRanks uint16 = 1<<ranks - 1

// rankFloors is the floor of a ready index: for every rank, whether it may
// hold entries (mask bit r) and a lower bound of their ids. A seek visits
// only the ranks that may hold entries, each from its own floor, so it
// never steps over the deleted entries (tombstones) below a floor, whatever
// the mix of priorities.
//
// Encoding: mask (2 bytes big endian), then ranks ids (8 bytes each).
type rankFloors struct {
	mask uint16
	ids  [ranks]uint64
}

const rankFloorsLen = 2 + 8*ranks

func (f *rankFloors) encode() []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, rankFloorsLen), f.mask)
	for _, id := range f.ids {
		b = binary.BigEndian.AppendUint64(b, id)
	}
	return b
}

func decodeFloors(prefix, v []byte) (rankFloors, error) {
	var f rankFloors
	if len(v) != rankFloorsLen {
		return f, fmt.Errorf("queue: corrupt floor of %q: %d bytes", prefix, len(v))
	}
	f.mask = binary.BigEndian.Uint16(v)
	for r := range f.ids {
		f.ids[r] = binary.BigEndian.Uint64(v[2+8*r:])
	}
	return f, nil
}

// firstPos returns the first entry of the ready index under prefix. With a
// floor it seeks, rank by rank, only the ranks that may hold entries, from
// their floors; without one (an index no receive has found non-empty yet)
// it scans the index from its start.
func firstPos(r state.Reader, k keys, prefix []byte) (indexHead, error) {
	h := indexHead{prefix: prefix}
	v, ok, err := r.Get(k.floor(prefix))
	if err != nil {
		return h, fmt.Errorf("queue: read floor of %q: %w", prefix, err)
	}
	if !ok {
		h.pos, h.found, err = firstIn(r, prefix, state.PrefixEnd(prefix))
		return h, err
	}
	if h.floors, err = decodeFloors(prefix, v); err != nil {
		return h, err
	}
	h.hasFloor = true
	for rank := range ranks {
		if h.floors.mask&(1<<rank) == 0 {
			continue
		}
		base := append(prefix[:len(prefix):len(prefix)], byte(rank))
		if h.pos, h.found, err = firstIn(r, appendID(base, h.floors.ids[rank]), state.PrefixEnd(base)); err != nil || h.found {
			return h, err
		}
		h.empty |= 1 << rank
	}
	return h, nil
}

// firstIn returns the position of the first key in [lo, hi).
func firstIn(r state.Reader, lo, hi []byte) (position, bool, error) {
	var e firstEntry // one allocation for the callback's results
	if err := r.Scan(lo, hi, e.visitPosition); err != nil {
		return position{}, false, fmt.Errorf("queue: scan %q: %w", lo, err)
	}
	return e.pos, e.found, e.err
}

// raiseFloors raises the floors of every index rh looked at to what its
// seek proved: the ranks it found empty may hold nothing, the rank of the
// head nothing below the head (nor the head itself when the receive takes
// it). An index seeked without a floor gets one only when it was found
// non-empty: the ranks before the head's are empty, those after may hold
// anything. Entries that enter an index lower its floors (lowerFloors), so
// the floors stay lower bounds.
func (t *tx) raiseFloors(rh *readyHeads, taken position, found bool) error {
	for _, h := range rh.heads[:rh.n] {
		f := h.floors
		switch {
		case !h.hasFloor && !h.found:
			continue
		case !h.hasFloor:
			f.mask = allRanks &^ (1<<h.pos.rank - 1)
		default:
			f.mask &^= h.empty
		}
		if h.found {
			f.ids[h.pos.rank] = h.pos.id
			if found && h.pos == taken {
				f.ids[h.pos.rank]++
			}
		}
		if !h.hasFloor || f != h.floors {
			if err := setLatest(t.w, t.k.floor(h.prefix), f.encode()); err != nil {
				return err
			}
		}
	}
	return nil
}

// lowerFloors lowers the floors of the two indexes a message enters (keys a
// and b) to its position.
func (t *tx) lowerFloors(a, b []byte, pos position) error {
	for _, key := range [2][]byte{a, b} {
		p := key[:len(key)-rankLen-8]
		v, ok, err := t.w.Get(t.k.floor(p))
		if err != nil {
			return fmt.Errorf("queue: read floor of %q: %w", p, err)
		}
		if !ok {
			continue // seeks scan this index from its start
		}
		f, err := decodeFloors(p, v)
		if err != nil {
			return err
		}
		bit := uint16(1) << pos.rank
		if f.mask&bit != 0 && f.ids[pos.rank] <= pos.id {
			continue
		}
		f.mask |= bit
		f.ids[pos.rank] = pos.id
		if err := setLatest(t.w, t.k.floor(p), f.encode()); err != nil {
			return err
		}
	}
	return nil
}

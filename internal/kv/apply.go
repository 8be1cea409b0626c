package kv

import (
	"fmt"

	"github.com/parley-chat/parley/internal/state"
)

// StateMachine applies kv commands to one partition's state. It has no fields:
// everything it needs is in the command, the meta and the state.
//
// Each key is stored under "k/"+key (relative to the partition) as a record:
// version (8 bytes, big endian), modified time in Unix ms (8 bytes, big
// endian), value. A key's version is 1 when it is created and grows by one
// with every put; a delete removes the record, so a later put starts again at 1.
type StateMachine struct{}

var _ state.Applier = StateMachine{}

// Apply implements state.Applier. A command that does not decode yields an
// invalid result and changes nothing; an error means the state could not be
// read or written, or a stored record is corrupt.
func (StateMachine) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	c, err := DecodeCommand(cmd)
	if err != nil {
		return invalidResult(err), nil
	}
	switch c := c.(type) {
	case Put:
		return applyPut(w, meta, c)
	case Delete:
		return applyDelete(w, c)
	default:
		return invalidResult(fmt.Errorf("kv: unhandled command %T", c)), nil
	}
}

func applyPut(w state.Writer, meta state.Meta, p Put) ([]byte, error) {
	k := dataKey(p.Key)
	cur, found, err := currentVersion(w, k)
	if err != nil {
		return nil, err
	}
	if (p.IfAbsent && found) || (p.IfVersion != 0 && p.IfVersion != cur) {
		return encodeResult(statusPreconditionFailed, cur), nil
	}
	next := cur + 1
	if err := w.Set(k, encodeRecord(next, meta.TimeMs, p.Value)); err != nil {
		return nil, fmt.Errorf("kv: put %q: %w", p.Key, err)
	}
	return encodeResult(statusOK, next), nil
}

func applyDelete(w state.Writer, d Delete) ([]byte, error) {
	k := dataKey(d.Key)
	cur, found, err := currentVersion(w, k)
	if err != nil {
		return nil, err
	}
	if !found {
		return encodeResult(statusNotFound, 0), nil
	}
	if d.IfVersion != 0 && d.IfVersion != cur {
		return encodeResult(statusPreconditionFailed, cur), nil
	}
	if err := w.Delete(k); err != nil {
		return nil, fmt.Errorf("kv: delete %q: %w", d.Key, err)
	}
	return encodeResult(statusOK, cur), nil
}

// currentVersion returns the version stored under the data key k, 0 and false
// when there is none.
func currentVersion(r state.Reader, k []byte) (uint64, bool, error) {
	rec, found, err := r.Get(k)
	if err != nil {
		return 0, false, fmt.Errorf("kv: read %q: %w", k, err)
	}
	if !found {
		return 0, false, nil
	}
	h, err := decodeHeader(k, rec)
	if err != nil {
		return 0, false, err
	}
	return h.version, true, nil
}

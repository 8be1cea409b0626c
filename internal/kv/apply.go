package kv

import (
	"fmt"

	"github.com/parley-chat/parley/internal/state"
)

// StateMachine applies kv commands to one partition's state. It has no fields:
// everything it needs is in the command, the meta and the state.
//
// Each key is stored under "k/"+key (relative to the partition) as a record
// (record.go): version, modified time in Unix ms, and since revisions the
// modification revision, expiry and lease; then the value. A key's version
// is 1 when it is created and grows by one with every put; a delete removes
// the record, so a later put starts again at 1. Every command that writes
// keys takes the partition's next revision (all its writes share it), adds
// an entry per key to the key's history (the last Keep versions are kept)
// and names the keys in the watch log (history.go).
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
		return applyDelete(w, meta, c)
	case Txn:
		return applyTxn(w, meta, c)
	case Expire:
		return applyExpire(w, meta, c)
	case Grant:
		return applyGrant(w, meta, c)
	case Attach:
		return applyAttach(w, meta, c)
	case KeepAlive:
		return applyKeepAlive(w, meta, c)
	case Revoke:
		return applyRevoke(w, meta, c)
	case Extend:
		return applyExtend(w, c)
	default:
		return invalidResult(fmt.Errorf("kv: unhandled command %T", c)), nil
	}
}

func applyPut(w state.Writer, meta state.Meta, p Put) ([]byte, error) {
	cur, found, err := readHeader(w, p.Key)
	if err != nil {
		return nil, err
	}
	if (p.IfAbsent && found) || (p.IfVersion != 0 && p.IfVersion != cur.version) {
		return encodeResult(statusPreconditionFailed, cur.version), nil
	}
	if p.Lease != 0 {
		if ok, err := leaseUsable(w, meta, p.Lease, p.LeaseDeadlineMs); err != nil || !ok {
			return leaseGone(p.Lease), err
		}
	}
	x := newRevWriter(w, meta, p.Keep)
	nh, err := x.set(p.Key, cur, found, putHeader(meta, cur, p.TTLMs, p.Lease), p.Value)
	if err != nil {
		return nil, err
	}
	if err := x.finish(); err != nil {
		return nil, err
	}
	return writeResult(nh.version, nh.modRev), nil
}

// putHeader is the header of a put over cur (version 0 when missing).
func putHeader(meta state.Meta, cur header, ttlMs, lease uint64) header {
	h := header{version: cur.version + 1, modifiedMs: meta.TimeMs, lease: lease}
	if ttlMs != 0 {
		h.expiresMs = meta.TimeMs + int64(ttlMs)
	}
	return h
}

func applyDelete(w state.Writer, meta state.Meta, d Delete) ([]byte, error) {
	cur, found, err := readHeader(w, d.Key)
	if err != nil {
		return nil, err
	}
	if !found {
		return encodeResult(statusNotFound, 0), nil
	}
	if d.IfVersion != 0 && d.IfVersion != cur.version {
		return encodeResult(statusPreconditionFailed, cur.version), nil
	}
	x := newRevWriter(w, meta, d.Keep)
	if err := x.remove(d.Key, cur, kindDelete); err != nil {
		return nil, err
	}
	if err := x.finish(); err != nil {
		return nil, err
	}
	return writeResult(cur.version, x.rev), nil
}

// readHeader returns key's record header, found false when there is none.
func readHeader(r state.Reader, key string) (header, bool, error) {
	k := dataKey(key)
	rec, found, err := r.Get(k)
	if err != nil {
		return header{}, false, fmt.Errorf("kv: read %q: %w", k, err)
	}
	if !found {
		return header{}, false, nil
	}
	h, _, err := decodeRecord(k, rec)
	return h, err == nil, err
}

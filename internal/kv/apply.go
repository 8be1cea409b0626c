package kv

import (
	"fmt"

	"github.com/parley-chat/parley/internal/state"
)

// StateMachine applies kv commands to one partition's state. Everything its
// results depend on is in the command, the meta and the state; a
// StateMachine made by NewStateMachine also keeps a memo of what puts read
// (applyCache), so it serves one partition only. The zero value keeps none
// and reads everything from the state.
//
// Each key is stored under "k/"+key (relative to the partition) as a record
// (record.go): version, modified time in Unix ms, and since revisions the
// modification revision, expiry and lease; then the value. A key's version
// is 1 when it is created and grows by one with every put; a delete removes
// the record, so a later put starts again at 1. Every command that writes
// keys takes the partition's next revision (all its writes share it), adds
// an entry per key to the key's history (the last Keep versions are kept)
// and names the keys in the watch log (history.go).
type StateMachine struct {
	cache *applyCache
}

var (
	_ state.Applier  = StateMachine{}
	_ state.Resetter = StateMachine{}
)

// NewStateMachine returns a StateMachine for one partition that remembers
// the partition's revision and the headers and history of the keys it
// wrote lately, instead of reading them from the state for every write.
func NewStateMachine() StateMachine { return StateMachine{cache: newApplyCache(cacheBudget)} }

// Reset implements state.Resetter: it forgets what it remembered of the
// partition's state.
func (sm StateMachine) Reset() {
	if sm.cache != nil {
		sm.cache.reset()
	}
}

// Apply implements state.Applier. A command that does not decode yields an
// invalid result and changes nothing; an error means the state could not be
// read or written, or a stored record is corrupt.
func (sm StateMachine) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	c, err := DecodeCommand(cmd)
	if err != nil {
		return invalidResult(err), nil
	}
	ac := sm.cache
	if ac == nil {
		ac = newApplyCache(0) // remembers nothing past this command
	} else if err := ac.load(w); err != nil {
		return nil, err
	}
	switch c := c.(type) {
	case Put:
		return applyPut(newRevWriter(w, ac, meta, c.Keep), c)
	case Delete:
		return applyDelete(newRevWriter(w, ac, meta, c.Keep), c)
	case Txn:
		return applyTxn(newRevWriter(w, ac, meta, c.Keep), c)
	case Expire:
		return applyExpire(newRevWriter(w, ac, meta, c.Keep), c)
	case Grant:
		return applyGrant(w, meta, c)
	case Attach:
		return applyAttach(w, meta, c)
	case KeepAlive:
		return applyKeepAlive(w, meta, c)
	case Revoke:
		return applyRevoke(newRevWriter(w, ac, meta, c.Keep), c)
	case Extend:
		return applyExtend(w, c)
	default:
		return invalidResult(fmt.Errorf("kv: unhandled command %T", c)), nil
	}
}

func applyPut(x *revWriter, p Put) ([]byte, error) {
	w, meta := x.w, x.meta
	cur, found, err := x.header(p.Key)
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

func applyDelete(x *revWriter, d Delete) ([]byte, error) {
	cur, found, err := x.header(d.Key)
	if err != nil {
		return nil, err
	}
	if !found {
		return encodeResult(statusNotFound, 0), nil
	}
	if d.IfVersion != 0 && d.IfVersion != cur.version {
		return encodeResult(statusPreconditionFailed, cur.version), nil
	}
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

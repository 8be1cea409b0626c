package kv

import (
	"bytes"

	"github.com/parley-chat/parley/internal/state"
)

// applyTxn evaluates t's comparisons and runs the branch they choose at
// one revision. A put of the branch on a lease that is gone refuses the
// whole transaction, changing nothing.
func applyTxn(x *revWriter, t Txn) ([]byte, error) {
	w, meta := x.w, x.meta
	ok := true
	for _, c := range t.Compare {
		held, err := compareHolds(w, c)
		if err != nil {
			return nil, err
		}
		ok = ok && held
	}
	ops := t.Failure
	if ok {
		ops = t.Success
	}
	for _, op := range ops {
		if op.Type != OpPut || op.Lease == 0 {
			continue
		}
		if usable, err := leaseUsable(w, meta, op.Lease, op.LeaseDeadlineMs); err != nil || !usable {
			return leaseGone(op.Lease), err
		}
	}
	res := TxnResult{Succeeded: ok, Results: make([]OpResult, 0, len(ops))}
	for _, op := range ops {
		r, err := applyOp(x, meta, op)
		if err != nil {
			return nil, err
		}
		res.Results = append(res.Results, r)
	}
	if err := x.finish(); err != nil {
		return nil, err
	}
	res.Revision = x.rev
	if res.Revision == 0 {
		rev, err := Revision(w)
		if err != nil {
			return nil, err
		}
		res.Revision = rev
	}
	return encodeTxnResult(res), nil
}

// compareHolds reports whether c holds in the current state.
func compareHolds(r state.Reader, c Compare) (bool, error) {
	item, found, err := Get(r, c.Key)
	if err != nil {
		return false, err
	}
	if c.ByValue {
		return found && bytes.Equal(item.Value, c.Value), nil
	}
	return item.Version == c.Version, nil
}

// applyOp runs one operation of a transaction.
func applyOp(x *revWriter, meta state.Meta, op Op) (OpResult, error) {
	r := OpResult{Type: op.Type, Key: op.Key}
	switch op.Type {
	case OpGet:
		item, found, err := Get(x.w, op.Key)
		if err != nil {
			return r, err
		}
		r.Found, r.Version, r.Revision, r.Value = found, item.Version, item.Revision, item.Value
	case OpDelete:
		cur, found, err := x.header(op.Key)
		if err != nil || !found {
			return r, err
		}
		r.Found, r.Version = true, cur.version
		return r, x.remove(op.Key, cur, kindDelete)
	case OpPut:
		cur, found, err := x.header(op.Key)
		if err != nil {
			return r, err
		}
		nh, err := x.set(op.Key, cur, found, putHeader(meta, cur, op.TTLMs, op.Lease), op.Value)
		if err != nil {
			return r, err
		}
		r.Found, r.Version, r.Revision = true, nh.version, nh.modRev
	}
	return r, nil
}

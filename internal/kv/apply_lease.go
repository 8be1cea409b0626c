package kv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/parley-chat/parley/internal/state"
)

// A lease lives in its home partition (LeaseHome of its id): TTL, deadline
// and the other partitions with keys attached. A partition with keys of a
// lease it is not home to keeps a copy holding the deadline the home gave
// (at attach, then passed on by every keep-alive: Extend), so each
// partition's leader expires its own keys by its own clock, through Raft,
// without asking the home. A revoked lease stays as a tombstone until its
// deadline, so a put still on its way is refused.

// errCorruptLease is the cause of corrupt lease records.
var errCorruptLease = errors.New("kv: corrupt lease record")

// leaseRecord is a lease as one partition keeps it.
type leaseRecord struct {
	LeaseInfo
	home bool
}

func encodeLease(l leaseRecord) []byte {
	b := []byte{0}
	if l.home {
		b[0] = 1
	}
	return appendLeaseFields(b, l.LeaseInfo)
}

func readLease(r state.Reader, id uint64) (leaseRecord, bool, error) {
	v, found, err := r.Get(leaseKey(id))
	if err != nil || !found {
		return leaseRecord{}, false, err
	}
	if len(v) == 0 {
		return leaseRecord{}, false, errCorruptLease
	}
	info, rest, err := readLeaseFields(v[1:], errCorruptLease)
	if err != nil || len(rest) != 0 {
		return leaseRecord{}, false, fmt.Errorf("%w: lease %d", errCorruptLease, id)
	}
	info.ID = id
	return leaseRecord{LeaseInfo: info, home: v[0] == 1}, true, nil
}

// writeLease stores l, moving its deadline index from old (0: none).
func writeLease(w state.Writer, l leaseRecord, oldDeadline uint64) error {
	if oldDeadline != 0 && oldDeadline != l.DeadlineMs {
		if err := w.Delete(deadlineKey(int64(oldDeadline), l.ID)); err != nil {
			return err
		}
	}
	if err := w.Set(deadlineKey(int64(l.DeadlineMs), l.ID), nil); err != nil {
		return err
	}
	return w.Set(leaseKey(l.ID), encodeLease(l))
}

// alive reports whether l may take keys at time now.
func (l leaseRecord) alive(now int64) bool { return !l.Revoked && int64(l.DeadlineMs) > now }

// leaseUsable reports whether a put may attach a key of this partition to
// lease id, which its home said lives until deadline; in a partition that
// is not the lease's home it creates the lease's copy.
func leaseUsable(w state.Writer, meta state.Meta, id, deadline uint64) (bool, error) {
	l, found, err := readLease(w, id)
	if err != nil {
		return false, err
	}
	if found {
		return l.alive(meta.TimeMs), nil
	}
	if LeaseHome(id) == meta.Partition || int64(deadline) <= meta.TimeMs {
		return false, nil
	}
	return true, writeLease(w, leaseRecord{LeaseInfo: LeaseInfo{ID: id, DeadlineMs: deadline}}, 0)
}

func applyGrant(w state.Writer, meta state.Meta, g Grant) ([]byte, error) {
	seq, err := readU64(w, leaseSeqKey)
	if err != nil {
		return nil, err
	}
	seq++
	if seq >= 1<<LeaseShift {
		return invalidResult(fmt.Errorf("kv: partition %d granted all its lease ids", meta.Partition)), nil
	}
	if err := w.Set([]byte(leaseSeqKey), u64(seq)); err != nil {
		return nil, err
	}
	l := leaseRecord{home: true, LeaseInfo: LeaseInfo{ID: meta.Partition<<LeaseShift | seq, TTLMs: g.TTLMs, DeadlineMs: uint64(meta.TimeMs) + g.TTLMs}}
	if err := writeLease(w, l, 0); err != nil {
		return nil, err
	}
	return encodeLeaseResult(l.LeaseInfo), nil
}

// homeLease reads lease id in its home partition: found only when alive.
func homeLease(w state.Writer, meta state.Meta, id uint64) (leaseRecord, bool, error) {
	l, found, err := readLease(w, id)
	if err != nil || !found || !l.home || !l.alive(meta.TimeMs) {
		return l, false, err
	}
	return l, true, nil
}

func applyAttach(w state.Writer, meta state.Meta, a Attach) ([]byte, error) {
	l, ok, err := homeLease(w, meta, a.Lease)
	if err != nil || !ok {
		return leaseGone(a.Lease), err
	}
	if a.Partition != meta.Partition && !slices.Contains(l.Partitions, a.Partition) {
		l.Partitions = append(l.Partitions, a.Partition)
		slices.Sort(l.Partitions)
		if err := writeLease(w, l, l.DeadlineMs); err != nil {
			return nil, err
		}
	}
	return encodeLeaseResult(l.LeaseInfo), nil
}

func applyKeepAlive(w state.Writer, meta state.Meta, k KeepAlive) ([]byte, error) {
	l, ok, err := homeLease(w, meta, k.Lease)
	if err != nil || !ok {
		return leaseGone(k.Lease), err
	}
	old := l.DeadlineMs
	l.DeadlineMs = uint64(meta.TimeMs) + l.TTLMs
	if err := writeLease(w, l, old); err != nil {
		return nil, err
	}
	return encodeLeaseResult(l.LeaseInfo), nil
}

func applyExtend(w state.Writer, x Extend) ([]byte, error) {
	l, found, err := readLease(w, x.Lease)
	if err != nil {
		return nil, err
	}
	if found && !l.home && !l.Revoked && x.DeadlineMs > l.DeadlineMs {
		old := l.DeadlineMs
		l.DeadlineMs = x.DeadlineMs
		if err := writeLease(w, l, old); err != nil {
			return nil, err
		}
	}
	return encodeLeaseResult(l.LeaseInfo), nil
}

// applyRevoke deletes the keys of this partition attached to the lease and
// leaves a tombstone until the lease's deadline. In the home partition a
// lease unknown (or already past its deadline) is gone; revoking twice
// answers the same partitions again, so a caller whose fan-out failed can
// retry.
func applyRevoke(x *revWriter, rv Revoke) ([]byte, error) {
	w, meta := x.w, x.meta
	l, found, err := readLease(w, rv.Lease)
	if err != nil {
		return nil, err
	}
	home := LeaseHome(rv.Lease) == meta.Partition
	if home && (!found || int64(l.DeadlineMs) <= meta.TimeMs) {
		return leaseGone(rv.Lease), nil
	}
	if !found {
		if int64(rv.DeadlineMs) <= meta.TimeMs {
			return encodeLeaseResult(LeaseInfo{ID: rv.Lease, Revoked: true}), nil
		}
		l = leaseRecord{LeaseInfo: LeaseInfo{ID: rv.Lease, DeadlineMs: rv.DeadlineMs}}
	}
	old := l.DeadlineMs
	if !found {
		old = 0
	}
	l.Revoked = true
	if err := writeLease(w, l, old); err != nil {
		return nil, err
	}
	if _, err := deleteAttached(x, rv.Lease, kindDelete, -1); err != nil {
		return nil, err
	}
	if err := x.finish(); err != nil {
		return nil, err
	}
	return encodeLeaseResult(l.LeaseInfo), nil
}

// deleteAttached deletes up to budget (no bound when negative) keys of this
// partition attached to lease id, as kind, and reports whether none are
// left.
func deleteAttached(x *revWriter, id uint64, kind byte, budget int) (bool, error) {
	lo := join([]byte(attachPrefix), u64(id))
	var keys []string
	more := false
	if err := x.w.Scan(lo, state.PrefixEnd(lo), func(k, _ []byte) bool {
		if budget >= 0 && len(keys) == budget {
			more = true
			return false
		}
		keys = append(keys, string(k[len(lo):]))
		return true
	}); err != nil {
		return false, err
	}
	for _, key := range keys {
		cur, found, err := x.header(key)
		if err != nil {
			return false, err
		}
		if !found || cur.lease != id { // a stale index entry
			if err := x.w.Delete(attachKey(id, key)); err != nil {
				return false, err
			}
			continue
		}
		if err := x.remove(key, cur, kind); err != nil {
			return false, err
		}
	}
	return !more, nil
}

// expireBudget bounds the keys one Expire command deletes.
const expireBudget = 512

// applyExpire deletes, at one revision, keys whose TTL ran out and keys of
// leases whose deadline passed by the command's time, up to expireBudget
// keys; leases that have nothing left are forgotten. Its result is the
// number of keys deleted.
func applyExpire(x *revWriter, e Expire) ([]byte, error) {
	w, meta := x.w, x.meta
	now := uint64(meta.TimeMs)
	budget := expireBudget
	lo := []byte(expiryPrefix)
	due := map[string]int64{}
	var order []string
	if err := w.Scan(lo, join(lo, u64(now+1)), func(k, _ []byte) bool {
		if len(order) == budget {
			return false
		}
		key := string(k[len(lo)+8:])
		due[key] = int64(binary.BigEndian.Uint64(k[len(lo):]))
		order = append(order, key)
		return true
	}); err != nil {
		return nil, err
	}
	for _, key := range order {
		cur, found, err := x.header(key)
		if err != nil {
			return nil, err
		}
		if !found || cur.expiresMs != due[key] {
			if err := w.Delete(expiryKey(due[key], key)); err != nil {
				return nil, err
			}
			continue
		}
		if err := x.remove(key, cur, kindExpire); err != nil {
			return nil, err
		}
		budget--
	}
	if err := expireLeases(x, now, budget); err != nil {
		return nil, err
	}
	if err := x.finish(); err != nil {
		return nil, err
	}
	return encodeResult(statusOK, uint64(len(x.keys))), nil
}

// expireLeases deletes the keys of leases past their deadline at now,
// within budget, forgetting each lease once it has no keys left.
func expireLeases(x *revWriter, now uint64, budget int) error {
	lo := []byte(deadlinePrefix)
	var ids []uint64
	var deadlines []int64
	if err := x.w.Scan(lo, join(lo, u64(now+1)), func(k, _ []byte) bool {
		deadlines = append(deadlines, int64(binary.BigEndian.Uint64(k[len(lo):])))
		ids = append(ids, binary.BigEndian.Uint64(k[len(lo)+8:]))
		return len(ids) < expireBudget
	}); err != nil {
		return err
	}
	for i, id := range ids {
		if budget <= 0 {
			return nil
		}
		before := len(x.keys)
		done, err := deleteAttached(x, id, kindExpire, budget)
		if err != nil {
			return err
		}
		budget -= len(x.keys) - before
		if !done {
			return nil
		}
		if err := x.w.Delete(deadlineKey(deadlines[i], id)); err != nil {
			return err
		}
		if err := x.w.Delete(leaseKey(id)); err != nil {
			return err
		}
	}
	return nil
}

// NextDue returns the earliest time (Unix ms) at which an Expire command
// would delete something or forget a lease in this partition; ok is false
// when nothing has a TTL or lease.
func NextDue(r state.Reader) (ms int64, ok bool, err error) {
	for _, p := range []string{expiryPrefix, deadlinePrefix} {
		lo := []byte(p)
		if err := r.Scan(lo, state.PrefixEnd(lo), func(k, _ []byte) bool {
			t := int64(binary.BigEndian.Uint64(k[len(lo):]))
			if !ok || t < ms {
				ms, ok = t, true
			}
			return false
		}); err != nil {
			return 0, false, err
		}
	}
	return ms, ok, nil
}

// GetLease reads lease id from its home partition's state; found is false
// when it is unknown or revoked. A lease past its deadline is found until
// its partition's leader expires it (moments later).
func GetLease(r state.Reader, id uint64) (LeaseInfo, bool, error) {
	l, found, err := readLease(r, id)
	if err != nil || !found || !l.home || l.Revoked {
		return LeaseInfo{}, false, err
	}
	return l.LeaseInfo, true, nil
}

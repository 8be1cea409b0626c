package kv

import (
	"encoding/binary"
	"fmt"
)

// LeaseShift places a lease's home partition in its id: id = partition <<
// LeaseShift | sequence number within the partition. Ids stay below 2^53
// (partitions are at most 4096), so JavaScript reads them exactly.
const LeaseShift = 40

// LeaseHome returns the partition that grants and keeps lease id.
func LeaseHome(id uint64) uint64 { return id >> LeaseShift }

// Grant creates a lease of TTLMs in the partition it is proposed to.
// Encoding: Tag, 'G', 0, uvarint TTLMs.
type Grant struct{ TTLMs uint64 }

// Attach records, in the lease's home partition, that keys of Partition
// are attached to Lease, and answers the lease's deadline. Encoding: Tag,
// 'A', 0, uvarint Lease, uvarint Partition.
type Attach struct{ Lease, Partition uint64 }

// KeepAlive renews Lease for its TTL in its home partition. Encoding: Tag,
// 'K', 0, uvarint Lease.
type KeepAlive struct{ Lease uint64 }

// Revoke ends Lease in the partition it is proposed to, deleting the keys
// of that partition attached to it. DeadlineMs (from the home partition)
// bounds how long another partition remembers the revocation. Encoding:
// Tag, 'R', flags (flagKeep), [uvarint Keep], uvarint Lease, uvarint
// DeadlineMs.
type Revoke struct{ Lease, DeadlineMs, Keep uint64 }

// Extend moves the deadline of Lease's copy in a partition other than its
// home to DeadlineMs (a keep-alive, passed on). Encoding: Tag, 'X', 0,
// uvarint Lease, uvarint DeadlineMs.
type Extend struct{ Lease, DeadlineMs uint64 }

// Expire deletes the keys whose TTL ran out and those of leases whose
// deadline passed, by the command's leader-stamped time; the partition's
// leader proposes it when something is due. Encoding: Tag, 'E', flags
// (flagKeep), [uvarint Keep].
type Expire struct{ Keep uint64 }

func (Grant) isCommand()     {}
func (Attach) isCommand()    {}
func (KeepAlive) isCommand() {}
func (Revoke) isCommand()    {}
func (Extend) isCommand()    {}
func (Expire) isCommand()    {}

// EncodeGrant, EncodeAttach, EncodeKeepAlive, EncodeRevoke, EncodeExtend
// and EncodeExpire return the binary encodings of the lease and expiry
// commands.
func EncodeGrant(g Grant) []byte { return encodeFields(opGrant, 0, g.TTLMs) }

// EncodeAttach: see EncodeGrant.
func EncodeAttach(a Attach) []byte { return encodeFields(opAttach, 0, a.Lease, a.Partition) }

// EncodeKeepAlive: see EncodeGrant.
func EncodeKeepAlive(k KeepAlive) []byte { return encodeFields(opKeepAlive, 0, k.Lease) }

// EncodeExtend: see EncodeGrant.
func EncodeExtend(x Extend) []byte { return encodeFields(opExtend, 0, x.Lease, x.DeadlineMs) }

// EncodeRevoke: see EncodeGrant.
func EncodeRevoke(r Revoke) []byte {
	if r.Keep == 0 {
		return encodeFields(opRevoke, 0, r.Lease, r.DeadlineMs)
	}
	return encodeFields(opRevoke, flagKeep, r.Keep, r.Lease, r.DeadlineMs)
}

// EncodeExpire: see EncodeGrant.
func EncodeExpire(e Expire) []byte {
	if e.Keep == 0 {
		return encodeFields(opExpire, 0)
	}
	return encodeFields(opExpire, flagKeep, e.Keep)
}

func encodeFields(op, flags byte, fields ...uint64) []byte {
	b := []byte{Tag, op, flags}
	for _, f := range fields {
		b = binary.AppendUvarint(b, f)
	}
	return b
}

// decodeLeaseCommand decodes the lease and expiry commands.
func decodeLeaseCommand(op, flags byte, rest []byte) (Command, error) {
	n, allowed := 0, byte(0)
	switch op {
	case opGrant, opKeepAlive:
		n = 1
	case opAttach, opExtend:
		n = 2
	case opRevoke:
		n, allowed = 2, flagKeep
	case opExpire:
		allowed = flagKeep
	default:
		return nil, fmt.Errorf("%w: unknown op %#x", errMalformed, op)
	}
	if flags&^allowed != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x", errMalformed, flags)
	}
	if flags&flagKeep != 0 {
		n++
	}
	f := make([]uint64, n)
	for i := range f {
		v, r, err := readUvarint(rest)
		if err != nil {
			return nil, err
		}
		if v == 0 && !(op == opRevoke && i == n-1) {
			return nil, fmt.Errorf("%w: field %d is 0", errMalformed, i)
		}
		f[i], rest = v, r
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(rest))
	}
	keep := uint64(0)
	if flags&flagKeep != 0 {
		keep, f = f[0], f[1:]
	}
	switch op {
	case opGrant:
		return Grant{TTLMs: f[0]}, nil
	case opKeepAlive:
		return KeepAlive{Lease: f[0]}, nil
	case opAttach:
		return Attach{Lease: f[0], Partition: f[1]}, nil
	case opExtend:
		return Extend{Lease: f[0], DeadlineMs: f[1]}, nil
	case opRevoke:
		return Revoke{Lease: f[0], DeadlineMs: f[1], Keep: keep}, nil
	default:
		return Expire{Keep: keep}, nil
	}
}

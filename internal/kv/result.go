package kv

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/wire"
)

// Result status bytes, the first byte of every result Apply returns. A put's
// or delete's result is the status followed by a uvarint version and, since
// revisions exist, a uvarint revision; an invalid result carries a message
// instead. Other commands' successful results are theirs (txnResult,
// leaseResult).
const (
	statusOK                 byte = 0 // version: the key's new (put) or removed (delete) version
	statusNotFound           byte = 1 // version: 0
	statusPreconditionFailed byte = 2 // version: the key's current version, 0 when missing
	statusInvalid            byte = 3 // rest: message
	statusLeaseGone          byte = 4 // version: the lease id
)

// errBadResult is the cause of DecodeResult errors on malformed results.
var errBadResult = errors.New("kv: malformed result")

func encodeResult(status byte, version uint64) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64)
	return binary.AppendUvarint(append(b, status), version)
}

// writeResult is a successful put's or delete's result.
func writeResult(version, revision uint64) []byte {
	return binary.AppendUvarint(encodeResult(statusOK, version), revision)
}

func leaseGone(id uint64) []byte { return encodeResult(statusLeaseGone, id) }

func invalidResult(err error) []byte {
	return append([]byte{statusInvalid}, err.Error()...)
}

// DecodeResult decodes the result of applying a kv command. On success it
// returns the version (the new version after a put, the removed version after
// a delete). Refusals come back as *errs.Error: NotFound for a missing key,
// PreconditionFailed (with the current version, 0 when the key is missing, as
// the returned version) when IfVersion or IfAbsent did not hold, and Invalid
// for a command the state machine could not decode. A malformed result is an
// internal error.
func DecodeResult(res []byte) (uint64, error) {
	v, _, err := DecodeWriteResult(res)
	return v, err
}

// DecodeWriteResult is DecodeResult that also returns the revision of a
// successful put or delete (0 in a result stored before revisions).
func DecodeWriteResult(res []byte) (version, revision uint64, err error) {
	rest, err := resultStatus(res)
	if err != nil {
		return 0, 0, err
	}
	v, rest, err := readUvarint(rest)
	if err == nil && res[0] == statusOK && len(rest) > 0 {
		revision, rest, err = readUvarint(rest)
	}
	if err != nil || len(rest) != 0 {
		return 0, 0, fmt.Errorf("%w: status %d, % x", errBadResult, res[0], res)
	}
	v, err = statusError(res[0], v)
	return v, revision, err
}

// resultStatus checks a result's status byte: an invalid command's message
// is an error; the rest follows the status.
func resultStatus(res []byte) ([]byte, error) {
	if len(res) == 0 {
		return nil, fmt.Errorf("%w: empty", errBadResult)
	}
	if res[0] == statusInvalid {
		return nil, errs.New(errs.Invalid, "rejected command: %s", res[1:])
	}
	return res[1:], nil
}

// statusError turns a refusal status and its number into its error.
func statusError(status byte, v uint64) (uint64, error) {
	switch status {
	case statusOK:
		return v, nil
	case statusLeaseGone:
		return 0, errs.New(errs.NotFound, "lease %d not found: it expired or was revoked", v)
	case statusNotFound:
		return 0, errs.New(errs.NotFound, "key not found")
	case statusPreconditionFailed:
		if v == 0 {
			return 0, errs.New(errs.PreconditionFailed, "precondition failed: the key does not exist")
		}
		return v, errs.New(errs.PreconditionFailed, "precondition failed: the current version is %d", v)
	default:
		return 0, fmt.Errorf("%w: unknown status %d", errBadResult, status)
	}
}

// OpResult is the answer of one transaction operation: a put's new version,
// a delete's removed version (Found false when the key was missing), a
// get's item.
type OpResult struct {
	Type     OpType
	Key      string
	Found    bool
	Version  uint64
	Revision uint64 // a get's modification revision
	Value    []byte // a get's value
}

// TxnResult is a transaction's answer: whether the comparisons held (so
// Success ran), the revision of its writes (the partition's revision when
// it wrote nothing), and one result per operation run.
type TxnResult struct {
	Succeeded bool
	Revision  uint64
	Results   []OpResult
}

func encodeTxnResult(t TxnResult) []byte {
	b := []byte{statusOK, 0}
	if t.Succeeded {
		b[1] = 1
	}
	b = binary.AppendUvarint(b, t.Revision)
	b = binary.AppendUvarint(b, uint64(len(t.Results)))
	for _, r := range t.Results {
		found := byte(0)
		if r.Found {
			found = 1
		}
		b = wire.AppendString(append(b, byte(r.Type), found), r.Key)
		b = binary.AppendUvarint(binary.AppendUvarint(b, r.Version), r.Revision)
		b = wire.AppendBytes(b, r.Value)
	}
	return b
}

// DecodeTxnResult decodes the result of applying a Txn; refusals are as
// in DecodeResult.
func DecodeTxnResult(res []byte) (TxnResult, error) {
	var t TxnResult
	rest, err := resultStatus(res)
	if err != nil {
		return t, err
	}
	if res[0] != statusOK {
		_, err := DecodeResult(res)
		return t, err
	}
	bad := fmt.Errorf("%w: txn % x", errBadResult, res)
	if len(rest) == 0 {
		return t, bad
	}
	t.Succeeded = rest[0] == 1
	var n uint64
	if t.Revision, rest, err = readUvarint(rest[1:]); err != nil {
		return t, bad
	}
	if n, rest, err = readCount(rest); err != nil {
		return t, bad
	}
	for range n {
		if len(rest) < 2 {
			return t, bad
		}
		r := OpResult{Type: OpType(rest[0]), Found: rest[1] == 1}
		if r.Key, rest, err = wire.String(rest[2:], errBadResult); err == nil {
			if r.Version, rest, err = readUvarint(rest); err == nil {
				if r.Revision, rest, err = readUvarint(rest); err == nil {
					r.Value, rest, err = wire.Bytes(rest, errBadResult)
				}
			}
		}
		if err != nil {
			return t, bad
		}
		t.Results = append(t.Results, r)
	}
	return t, nil
}

// LeaseInfo is a lease as its home partition keeps it.
type LeaseInfo struct {
	ID         uint64
	TTLMs      uint64
	DeadlineMs uint64
	// Partitions lists the other partitions with keys attached to it.
	Partitions []uint64
	Revoked    bool
}

func encodeLeaseResult(l LeaseInfo) []byte {
	b := binary.AppendUvarint([]byte{statusOK}, l.ID)
	return appendLeaseFields(b, l)
}

func appendLeaseFields(b []byte, l LeaseInfo) []byte {
	revoked := uint64(0)
	if l.Revoked {
		revoked = 1
	}
	for _, v := range []uint64{l.TTLMs, l.DeadlineMs, revoked, uint64(len(l.Partitions))} {
		b = binary.AppendUvarint(b, v)
	}
	for _, p := range l.Partitions {
		b = binary.AppendUvarint(b, p)
	}
	return b
}

// DecodeLeaseResult decodes the result of Grant, Attach, KeepAlive and
// Revoke; a lease that expired or was revoked is errs.NotFound.
func DecodeLeaseResult(res []byte) (LeaseInfo, error) {
	var l LeaseInfo
	rest, err := resultStatus(res)
	if err != nil {
		return l, err
	}
	if res[0] != statusOK {
		_, err := DecodeResult(res)
		return l, err
	}
	if l.ID, rest, err = readUvarint(rest); err != nil {
		return l, fmt.Errorf("%w: lease % x", errBadResult, res)
	}
	l2, rest, err := readLeaseFields(rest, errBadResult)
	if err != nil || len(rest) != 0 {
		return l, fmt.Errorf("%w: lease % x", errBadResult, res)
	}
	l2.ID = l.ID
	return l2, nil
}

func readLeaseFields(b []byte, malformed error) (LeaseInfo, []byte, error) {
	var l LeaseInfo
	f := make([]uint64, 4)
	var err error
	for i := range f {
		if f[i], b, err = wire.Uvarint(b, malformed); err != nil {
			return l, nil, err
		}
	}
	l.TTLMs, l.DeadlineMs, l.Revoked = f[0], f[1], f[2] == 1
	if f[3] > uint64(len(b)) {
		return l, nil, fmt.Errorf("%w: %d partitions", malformed, f[3])
	}
	for range f[3] {
		var p uint64
		if p, b, err = wire.Uvarint(b, malformed); err != nil {
			return l, nil, err
		}
		l.Partitions = append(l.Partitions, p)
	}
	return l, b, nil
}

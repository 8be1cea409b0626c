package kv

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/wire"
)

// OpType is the kind of one operation of a transaction.
type OpType byte

// Operation types of a transaction.
const (
	OpPut    OpType = 'P'
	OpDelete OpType = 'D'
	OpGet    OpType = 'G'
)

// Compare is one condition of a transaction: Key's version equals Version
// (0: the key does not exist), or, with ByValue, Key exists and holds Value.
type Compare struct {
	Key     string
	ByValue bool
	Version uint64
	Value   []byte
}

// Op is one operation of a transaction: a put (Value, with TTLMs or a
// Lease as in Put), a delete, or a get whose answer comes back in the
// result.
type Op struct {
	Type            OpType
	Key             string
	Value           []byte
	TTLMs           uint64
	Lease           uint64
	LeaseDeadlineMs uint64
}

// Txn compares, then applies Success when every comparison holds and
// Failure otherwise, atomically, at one revision. Every key it names lives
// in the partition it is proposed to.
//
// Encoding: Tag, 'T', flags (flagKeep only), [uvarint Keep], uvarint
// len(Compare), each: 'V' or 'S', key, uvarint version or bytes value;
// then Success and Failure, each uvarint len and its ops: type byte, key,
// and for a put the put flags (flagTTL, flagLease), their fields and the
// value as bytes.
type Txn struct {
	Compare          []Compare
	Success, Failure []Op
	Keep             uint64
}

func (Txn) isCommand() {}

// EncodeTxn returns the binary encoding of t.
func EncodeTxn(t Txn) []byte {
	b := []byte{Tag, opTxn, 0}
	if t.Keep != 0 {
		b[2] = flagKeep
		b = binary.AppendUvarint(b, t.Keep)
	}
	b = binary.AppendUvarint(b, uint64(len(t.Compare)))
	for _, c := range t.Compare {
		if c.ByValue {
			b = wire.AppendBytes(wire.AppendString(append(b, 'S'), c.Key), c.Value)
		} else {
			b = binary.AppendUvarint(wire.AppendString(append(b, 'V'), c.Key), c.Version)
		}
	}
	for _, ops := range [][]Op{t.Success, t.Failure} {
		b = binary.AppendUvarint(b, uint64(len(ops)))
		for _, op := range ops {
			b = wire.AppendString(append(b, byte(op.Type)), op.Key)
			if op.Type == OpPut {
				b = appendPutFields(b, Put{TTLMs: op.TTLMs, Lease: op.Lease, LeaseDeadlineMs: op.LeaseDeadlineMs})
				b = wire.AppendBytes(b, op.Value)
			}
		}
	}
	return b
}

func decodeTxn(flags byte, rest []byte) (Txn, error) {
	var t Txn
	if flags&^flagKeep != 0 {
		return t, fmt.Errorf("%w: unknown flags %#x", errMalformed, flags)
	}
	var err error
	if flags&flagKeep != 0 {
		if t.Keep, rest, err = readUvarint(rest); err != nil || t.Keep == 0 {
			return t, fmt.Errorf("%w: bad keep", errMalformed)
		}
	}
	n, rest, err := readCount(rest)
	if err != nil {
		return t, err
	}
	for range n {
		var c Compare
		if len(rest) == 0 || (rest[0] != 'S' && rest[0] != 'V') {
			return t, fmt.Errorf("%w: bad compare", errMalformed)
		}
		c.ByValue = rest[0] == 'S'
		if c.Key, rest, err = wire.String(rest[1:], errMalformed); err != nil {
			return t, err
		}
		if c.ByValue {
			c.Value, rest, err = wire.Bytes(rest, errMalformed)
		} else {
			c.Version, rest, err = readUvarint(rest)
		}
		if err != nil {
			return t, err
		}
		t.Compare = append(t.Compare, c)
	}
	if t.Success, rest, err = decodeOps(rest); err != nil {
		return t, err
	}
	if t.Failure, rest, err = decodeOps(rest); err != nil {
		return t, err
	}
	if len(rest) != 0 {
		return t, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(rest))
	}
	return t, nil
}

// readCount reads a uvarint count no larger than the bytes left (every
// item takes at least one byte).
func readCount(b []byte) (uint64, []byte, error) {
	n, rest, err := readUvarint(b)
	if err != nil {
		return 0, nil, err
	}
	if n > uint64(len(rest)) {
		return 0, nil, fmt.Errorf("%w: count %d with %d bytes left", errMalformed, n, len(rest))
	}
	return n, rest, nil
}

func decodeOps(b []byte) ([]Op, []byte, error) {
	n, rest, err := readCount(b)
	if err != nil {
		return nil, nil, err
	}
	var ops []Op
	for range n {
		if len(rest) == 0 {
			return nil, nil, fmt.Errorf("%w: truncated op", errMalformed)
		}
		op := Op{Type: OpType(rest[0])}
		if op.Key, rest, err = wire.String(rest[1:], errMalformed); err != nil {
			return nil, nil, err
		}
		switch op.Type {
		case OpDelete, OpGet:
		case OpPut:
			if len(rest) == 0 || rest[0]&^(flagTTL|flagLease) != 0 {
				return nil, nil, fmt.Errorf("%w: bad put flags", errMalformed)
			}
			var p Put
			if p, rest, err = readPutFields(rest[0], rest[1:]); err != nil {
				return nil, nil, err
			}
			op.TTLMs, op.Lease, op.LeaseDeadlineMs = p.TTLMs, p.Lease, p.LeaseDeadlineMs
			if op.Value, rest, err = wire.Bytes(rest, errMalformed); err != nil {
				return nil, nil, err
			}
		default:
			return nil, nil, fmt.Errorf("%w: unknown op %#x", errMalformed, op.Type)
		}
		ops = append(ops, op)
	}
	return ops, rest, nil
}

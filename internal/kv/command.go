// Package kv is Parley's replicated key-value store: the binary commands, the
// deterministic state machine that applies them to one partition's state,
// pure reads over that state, and the Service that turns API calls into
// proposals through a state.Replicator that the engine implements.
//
// The package uses only the standard library, internal/state and internal/errs;
// it knows nothing about Raft, Pebble or HTTP.
package kv

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/internal/wire"
)

// Tag is the first byte of every kv command. The partition state machine
// dispatches on it to hand the command to StateMachine.
const Tag byte = 'K'

// Operation bytes, the second byte of every command.
const (
	opPut    byte = 'P'
	opDelete byte = 'D'
)

// Flag bits, the third byte of every command. Unknown bits are rejected, so a
// later field can be added under a new bit without old decoders misreading it.
const (
	flagIfVersion byte = 1 << iota // a uvarint IfVersion follows the flags
	flagIfAbsent                   // Put only: create the key only if it is missing
	putFlags      = flagIfVersion | flagIfAbsent
	deleteFlags   = flagIfVersion
)

// Command is a decoded kv command: Put or Delete.
type Command interface {
	isCommand()
}

// Put stores Value under Key.
//
// Encoding: Tag, 'P', flags, [uvarint IfVersion], uvarint len(Key), Key, Value
// (the rest of the command).
type Put struct {
	Key string
	// Value is the value to store. After DecodeCommand it aliases the command
	// bytes.
	Value []byte
	// IfVersion, when not 0, makes the put a compare-and-swap: it applies only
	// if the key's current version equals IfVersion.
	IfVersion uint64
	// IfAbsent makes the put apply only if the key does not exist. It excludes
	// IfVersion.
	IfAbsent bool
}

// Delete removes Key.
//
// Encoding: Tag, 'D', flags, [uvarint IfVersion], uvarint len(Key), Key.
type Delete struct {
	Key string
	// IfVersion, when not 0, makes the delete apply only if the key's current
	// version equals IfVersion.
	IfVersion uint64
}

func (Put) isCommand()    {}
func (Delete) isCommand() {}

// errMalformed is the cause of every DecodeCommand error.
var errMalformed = errors.New("kv: malformed command")

// EncodePut returns the binary encoding of p.
func EncodePut(p Put) []byte {
	b := make([]byte, 0, 3+2*binary.MaxVarintLen64+len(p.Key)+len(p.Value))
	var flags byte
	if p.IfVersion != 0 {
		flags |= flagIfVersion
	}
	if p.IfAbsent {
		flags |= flagIfAbsent
	}
	b = appendHeader(b, opPut, flags, p.IfVersion)
	b = binary.AppendUvarint(b, uint64(len(p.Key)))
	b = append(b, p.Key...)
	return append(b, p.Value...)
}

// EncodeDelete returns the binary encoding of d.
func EncodeDelete(d Delete) []byte {
	b := make([]byte, 0, 3+2*binary.MaxVarintLen64+len(d.Key))
	var flags byte
	if d.IfVersion != 0 {
		flags |= flagIfVersion
	}
	b = appendHeader(b, opDelete, flags, d.IfVersion)
	b = binary.AppendUvarint(b, uint64(len(d.Key)))
	return append(b, d.Key...)
}

func appendHeader(b []byte, op, flags byte, ifVersion uint64) []byte {
	b = append(b, Tag, op, flags)
	if flags&flagIfVersion != 0 {
		b = binary.AppendUvarint(b, ifVersion)
	}
	return b
}

// DecodeCommand decodes a command made by EncodePut or EncodeDelete. It
// accepts only canonical encodings (minimal varints, no unknown flags, no
// trailing bytes, a non-empty key, IfVersion flagged only when not 0), so
// every command it accepts re-encodes to the same bytes. It never panics.
func DecodeCommand(cmd []byte) (Command, error) {
	if len(cmd) < 3 || cmd[0] != Tag {
		return nil, fmt.Errorf("%w: missing tag or header", errMalformed)
	}
	op, flags, rest := cmd[1], cmd[2], cmd[3:]
	allowed := byte(deleteFlags)
	if op == opPut {
		allowed = putFlags
	}
	if flags&^allowed != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x", errMalformed, flags)
	}
	var ifVersion uint64
	if flags&flagIfVersion != 0 {
		v, r, err := readUvarint(rest)
		if err != nil {
			return nil, err
		}
		if v == 0 {
			return nil, fmt.Errorf("%w: flagged if-version is 0", errMalformed)
		}
		ifVersion, rest = v, r
	}
	key, rest, err := readKey(rest)
	if err != nil {
		return nil, err
	}
	switch op {
	case opPut:
		absent := flags&flagIfAbsent != 0
		if absent && ifVersion != 0 {
			return nil, fmt.Errorf("%w: if-absent and if-version together", errMalformed)
		}
		return Put{Key: key, Value: rest, IfVersion: ifVersion, IfAbsent: absent}, nil
	case opDelete:
		if len(rest) != 0 {
			return nil, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(rest))
		}
		return Delete{Key: key, IfVersion: ifVersion}, nil
	default:
		return nil, fmt.Errorf("%w: unknown op %#x", errMalformed, op)
	}
}

// readKey reads a uvarint length and that many bytes of non-empty key.
func readKey(b []byte) (string, []byte, error) {
	n, rest, err := readUvarint(b)
	if err != nil {
		return "", nil, err
	}
	if n == 0 || n > uint64(len(rest)) {
		return "", nil, fmt.Errorf("%w: key length %d with %d bytes left", errMalformed, n, len(rest))
	}
	return string(rest[:n]), rest[n:], nil
}

// readUvarint reads a minimally encoded uvarint (wire.Uvarint).
func readUvarint(b []byte) (uint64, []byte, error) { return wire.Uvarint(b, errMalformed) }

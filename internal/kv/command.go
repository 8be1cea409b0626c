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
	opPut       byte = 'P'
	opDelete    byte = 'D'
	opTxn       byte = 'T'
	opExpire    byte = 'E'
	opGrant     byte = 'G'
	opAttach    byte = 'A'
	opKeepAlive byte = 'K'
	opRevoke    byte = 'R'
	opExtend    byte = 'X'
)

// Flag bits, the third byte of every command. Unknown bits are rejected, so a
// later field can be added under a new bit without old decoders misreading it.
const (
	flagIfVersion byte = 1 << iota // a uvarint IfVersion follows the flags
	flagIfAbsent                   // Put only: create the key only if it is missing
	flagTTL                        // Put only: a uvarint TTLMs follows
	flagLease                      // Put only: uvarint Lease and LeaseDeadlineMs follow
	flagKeep                       // a uvarint Keep (versions kept per key) follows
	putFlags      = flagIfVersion | flagIfAbsent | flagTTL | flagLease | flagKeep
	deleteFlags   = flagIfVersion | flagKeep
)

// Command is a decoded kv command: Put, Delete, Txn, Expire or one of the
// lease commands.
type Command interface {
	isCommand()
}

// Put stores Value under Key.
//
// Encoding: Tag, 'P', flags, [uvarint IfVersion], [uvarint TTLMs], [uvarint
// Lease, uvarint LeaseDeadlineMs], [uvarint Keep], uvarint len(Key), Key,
// Value (the rest of the command).
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
	// TTLMs, when not 0, makes the key expire TTLMs after the put's
	// leader-stamped time. It excludes Lease.
	TTLMs uint64
	// Lease, when not 0, attaches the key to a lease, which the service
	// found alive until LeaseDeadlineMs in its home partition.
	Lease           uint64
	LeaseDeadlineMs uint64
	// Keep is how many versions of the key to keep (0: DefaultHistory).
	Keep uint64
}

// Delete removes Key.
//
// Encoding: Tag, 'D', flags, [uvarint IfVersion], [uvarint Keep], uvarint
// len(Key), Key.
type Delete struct {
	Key string
	// IfVersion, when not 0, makes the delete apply only if the key's current
	// version equals IfVersion.
	IfVersion uint64
	// Keep is as in Put.
	Keep uint64
}

func (Put) isCommand()    {}
func (Delete) isCommand() {}

// errMalformed is the cause of every DecodeCommand error.
var errMalformed = errors.New("kv: malformed command")

// EncodePut returns the binary encoding of p.
func EncodePut(p Put) []byte {
	b := make([]byte, 0, 3+6*binary.MaxVarintLen64+len(p.Key)+len(p.Value))
	b = append(b, Tag, opPut)
	b = appendPutFields(b, p)
	b = binary.AppendUvarint(b, uint64(len(p.Key)))
	b = append(b, p.Key...)
	return append(b, p.Value...)
}

// appendPutFields appends p's flags and the optional fields they announce.
func appendPutFields(b []byte, p Put) []byte {
	var flags byte
	for _, f := range []struct {
		on  bool
		bit byte
	}{{p.IfVersion != 0, flagIfVersion}, {p.IfAbsent, flagIfAbsent}, {p.TTLMs != 0, flagTTL}, {p.Lease != 0, flagLease}, {p.Keep != 0, flagKeep}} {
		if f.on {
			flags |= f.bit
		}
	}
	b = append(b, flags)
	if p.IfVersion != 0 {
		b = binary.AppendUvarint(b, p.IfVersion)
	}
	if p.TTLMs != 0 {
		b = binary.AppendUvarint(b, p.TTLMs)
	}
	if p.Lease != 0 {
		b = binary.AppendUvarint(binary.AppendUvarint(b, p.Lease), p.LeaseDeadlineMs)
	}
	if p.Keep != 0 {
		b = binary.AppendUvarint(b, p.Keep)
	}
	return b
}

// EncodeDelete returns the binary encoding of d.
func EncodeDelete(d Delete) []byte {
	b := make([]byte, 0, 3+2*binary.MaxVarintLen64+len(d.Key))
	var flags byte
	if d.IfVersion != 0 {
		flags |= flagIfVersion
	}
	if d.Keep != 0 {
		flags |= flagKeep
	}
	b = append(b, Tag, opDelete, flags)
	if d.IfVersion != 0 {
		b = binary.AppendUvarint(b, d.IfVersion)
	}
	if d.Keep != 0 {
		b = binary.AppendUvarint(b, d.Keep)
	}
	b = binary.AppendUvarint(b, uint64(len(d.Key)))
	return append(b, d.Key...)
}

// DecodeCommand decodes a command made by one of the Encode functions. It
// accepts only canonical encodings (minimal varints, no unknown flags, no
// trailing bytes, non-empty keys, optional fields flagged only when not 0),
// so every command it accepts re-encodes to the same bytes. It never panics.
func DecodeCommand(cmd []byte) (Command, error) {
	if len(cmd) < 3 || cmd[0] != Tag {
		return nil, fmt.Errorf("%w: missing tag or header", errMalformed)
	}
	switch op := cmd[1]; op {
	case opPut:
		p, rest, err := readPutFields(cmd[2], cmd[3:])
		if err != nil {
			return nil, err
		}
		if p.Key, rest, err = readKey(rest); err != nil {
			return nil, err
		}
		p.Value = rest
		return p, nil
	case opDelete:
		return decodeDelete(cmd[2], cmd[3:])
	case opTxn:
		return decodeTxn(cmd[2], cmd[3:])
	default:
		return decodeLeaseCommand(op, cmd[2], cmd[3:])
	}
}

// readPutFields reads a put's flags and optional fields.
func readPutFields(flags byte, rest []byte) (Put, []byte, error) {
	var p Put
	if flags&^putFlags != 0 {
		return p, nil, fmt.Errorf("%w: unknown flags %#x", errMalformed, flags)
	}
	p.IfAbsent = flags&flagIfAbsent != 0
	fields := []struct {
		bit byte
		dst *uint64
	}{{flagIfVersion, &p.IfVersion}, {flagTTL, &p.TTLMs}, {flagLease, &p.Lease}, {flagLease, &p.LeaseDeadlineMs}, {flagKeep, &p.Keep}}
	for _, f := range fields {
		if flags&f.bit == 0 {
			continue
		}
		v, r, err := readUvarint(rest)
		if err != nil {
			return p, nil, err
		}
		if v == 0 {
			return p, nil, fmt.Errorf("%w: a flagged field is 0", errMalformed)
		}
		*f.dst, rest = v, r
	}
	switch {
	case p.IfAbsent && p.IfVersion != 0:
		return p, nil, fmt.Errorf("%w: if-absent and if-version together", errMalformed)
	case p.TTLMs != 0 && p.Lease != 0:
		return p, nil, fmt.Errorf("%w: ttl and lease together", errMalformed)
	}
	return p, rest, nil
}

func decodeDelete(flags byte, rest []byte) (Delete, error) {
	var d Delete
	if flags&^deleteFlags != 0 {
		return d, fmt.Errorf("%w: unknown flags %#x", errMalformed, flags)
	}
	for _, f := range []struct {
		bit byte
		dst *uint64
	}{{flagIfVersion, &d.IfVersion}, {flagKeep, &d.Keep}} {
		if flags&f.bit == 0 {
			continue
		}
		v, r, err := readUvarint(rest)
		if err != nil {
			return d, err
		}
		if v == 0 {
			return d, fmt.Errorf("%w: a flagged field is 0", errMalformed)
		}
		*f.dst, rest = v, r
	}
	key, rest, err := readKey(rest)
	if err != nil {
		return d, err
	}
	if len(rest) != 0 {
		return d, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(rest))
	}
	d.Key = key
	return d, nil
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

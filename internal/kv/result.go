package kv

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
)

// Result status bytes, the first byte of every result Apply returns. A result
// is the status followed by a uvarint version; an invalid result carries a
// message instead of the version.
const (
	statusOK                 byte = 0 // version: the key's new (put) or removed (delete) version
	statusNotFound           byte = 1 // version: 0
	statusPreconditionFailed byte = 2 // version: the key's current version, 0 when missing
	statusInvalid            byte = 3 // rest: message
)

// errBadResult is the cause of DecodeResult errors on malformed results.
var errBadResult = errors.New("kv: malformed result")

func encodeResult(status byte, version uint64) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64)
	return binary.AppendUvarint(append(b, status), version)
}

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
	if len(res) == 0 {
		return 0, fmt.Errorf("%w: empty", errBadResult)
	}
	if res[0] == statusInvalid {
		return 0, errs.New(errs.Invalid, "rejected command: %s", res[1:])
	}
	v, rest, err := readUvarint(res[1:])
	if err != nil || len(rest) != 0 {
		return 0, fmt.Errorf("%w: status %d, % x", errBadResult, res[0], res)
	}
	switch res[0] {
	case statusOK:
		return v, nil
	case statusNotFound:
		return 0, errs.New(errs.NotFound, "key not found")
	case statusPreconditionFailed:
		if v == 0 {
			return 0, errs.New(errs.PreconditionFailed, "precondition failed: the key does not exist")
		}
		return v, errs.New(errs.PreconditionFailed, "precondition failed: the current version is %d", v)
	default:
		return 0, fmt.Errorf("%w: unknown status %d", errBadResult, res[0])
	}
}

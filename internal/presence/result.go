package presence

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
)

// Result status bytes, the first byte of every result Apply returns.
const (
	statusOK      byte = 0 // payload: uvarint count, then for Expire a more byte (0 or 1)
	statusInvalid byte = 1 // payload: message
)

// errBadResult is the cause of result decoding errors on malformed results.
var errBadResult = errors.New("presence: malformed result")

func invalidResult(err error) []byte {
	return append([]byte{statusInvalid}, err.Error()...)
}

func countResult(n uint64) []byte {
	return binary.AppendUvarint([]byte{statusOK}, n)
}

func expireResult(n uint64, more bool) []byte {
	b := countResult(n)
	if more {
		return append(b, 1)
	}
	return append(b, 0)
}

// DecodeCountResult decodes the result of Renew (leases written) or Release
// (leases ended); a command Apply refused is errs.Invalid.
func DecodeCountResult(res []byte) (uint64, error) {
	n, rest, err := decodeCount(res)
	if err != nil {
		return 0, err
	}
	if len(rest) != 0 {
		return 0, fmt.Errorf("%w: %d trailing bytes", errBadResult, len(rest))
	}
	return n, nil
}

// DecodeExpireResult decodes the result of Expire: how many leases it
// deleted and whether expired ones remain (the limit was reached).
func DecodeExpireResult(res []byte) (deleted uint64, more bool, err error) {
	n, rest, err := decodeCount(res)
	if err != nil {
		return 0, false, err
	}
	if len(rest) != 1 || rest[0] > 1 {
		return 0, false, fmt.Errorf("%w: expire payload % x", errBadResult, rest)
	}
	return n, rest[0] == 1, nil
}

func decodeCount(res []byte) (uint64, []byte, error) {
	if len(res) == 0 {
		return 0, nil, fmt.Errorf("%w: empty", errBadResult)
	}
	switch res[0] {
	case statusOK:
	case statusInvalid:
		return 0, nil, errs.New(errs.Invalid, "rejected presence command: %s", res[1:])
	default:
		return 0, nil, fmt.Errorf("%w: unknown status %d", errBadResult, res[0])
	}
	n, rest, err := readUvarint(res[1:])
	if err != nil {
		return 0, nil, fmt.Errorf("%w: count", errBadResult)
	}
	return n, rest, nil
}

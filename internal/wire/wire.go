// Package wire is the canonical binary encoding the domain commands and
// records share: minimal uvarints and uvarint-length-prefixed strings. Its
// readers accept only canonical input, so a decoded value re-encodes to the
// same bytes (replicated commands must decode alike everywhere). It also
// builds the replication dedup keys of client requests, which every node
// must build alike (dedup.go). Standard library and internal/errs only: the
// domain packages import it.
package wire

import (
	"encoding/binary"
	"fmt"
)

// AppendString appends s to b as a uvarint length and its bytes.
func AppendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// Uvarint reads a minimally encoded uvarint from b and returns it with the
// bytes after it. Bad or non-minimal encodings are errors wrapping
// malformed, the caller's sentinel.
func Uvarint(b []byte, malformed error) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: bad varint", malformed)
	}
	if n > 1 && b[n-1] == 0 {
		return 0, nil, fmt.Errorf("%w: non-minimal varint", malformed)
	}
	return v, b[n:], nil
}

// AppendBytes appends v to b as a uvarint length and its bytes; v may be
// empty.
func AppendBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

// Bytes reads a uvarint length and that many bytes from b (zero bytes is
// nil) and returns them, aliasing b, with the bytes after them. It is the
// reader for AppendBytes, and for AppendString where a string may be
// empty; errors wrap malformed.
func Bytes(b []byte, malformed error) ([]byte, []byte, error) {
	n, rest, err := Uvarint(b, malformed)
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(rest)) {
		return nil, nil, fmt.Errorf("%w: length %d with %d bytes left", malformed, n, len(rest))
	}
	if n == 0 {
		return nil, rest, nil
	}
	return rest[:n:n], rest[n:], nil
}

// String reads a uvarint length and that many bytes of non-empty string
// from b and returns it with the bytes after it; errors wrap malformed.
func String(b []byte, malformed error) (string, []byte, error) {
	n, rest, err := Uvarint(b, malformed)
	if err != nil {
		return "", nil, err
	}
	if n == 0 || n > uint64(len(rest)) {
		return "", nil, fmt.Errorf("%w: string length %d with %d bytes left", malformed, n, len(rest))
	}
	return string(rest[:n]), rest[n:], nil
}

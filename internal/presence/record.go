package presence

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/wire"
)

// State keys, relative to the partition. Every key starts with "p/".
//
//	p/l/<uvarint len(user)><user><node>   lease; <user> is the lower-cased username
//
// The length prefix keeps ("ab", node "c") apart from ("abc", node ""), so
// "p/l/"+uvarint(len(user))+user is a prefix of exactly that user's leases.
const prefixLease = "p/l/"

// recordFormat is the first byte of every stored lease, so a later format
// can be told apart.
const recordFormat byte = 1

// recordHeaderLen is the fixed part of a lease record: format, expires ms.
const recordHeaderLen = 9

// userPrefix returns the prefix of every lease key of the lower-cased user.
func userPrefix(lowerUser string) []byte {
	b := make([]byte, 0, len(prefixLease)+binary.MaxVarintLen64+len(lowerUser))
	return wire.AppendString(append(b, prefixLease...), lowerUser)
}

// leaseKey returns the key of node's lease of the lower-cased user.
func leaseKey(lowerUser, node string) []byte {
	return append(userPrefix(lowerUser), node...)
}

// splitLeaseKey returns the lower-cased user and the node of a lease key.
func splitLeaseKey(k []byte) (lowerUser, node string, err error) {
	if len(k) <= len(prefixLease) || string(k[:len(prefixLease)]) != prefixLease {
		return "", "", fmt.Errorf("presence: corrupt lease key %q", k)
	}
	user, rest, err := readName(k[len(prefixLease):])
	if err != nil || len(rest) == 0 {
		return "", "", fmt.Errorf("presence: corrupt lease key %q", k)
	}
	return user, string(rest), nil
}

// record is a stored lease.
type record struct {
	expiresMs int64
	// name is the username as the holding node last wrote it.
	name string
}

// Encoding: format, expires ms (8 bytes BE), name (the rest).
func encodeRecord(r record) []byte {
	b := make([]byte, 0, recordHeaderLen+len(r.name))
	b = append(b, recordFormat)
	b = binary.BigEndian.AppendUint64(b, uint64(r.expiresMs))
	return append(b, r.name...)
}

func decodeRecord(rec []byte) (record, error) {
	if len(rec) <= recordHeaderLen || rec[0] != recordFormat {
		return record{}, fmt.Errorf("presence: corrupt lease record (%d bytes)", len(rec))
	}
	return record{expiresMs: int64(binary.BigEndian.Uint64(rec[1:])), name: string(rec[recordHeaderLen:])}, nil
}

// Fold returns the key a username is tracked and routed under: the name
// with ASCII letters lowercased, as usernames are case-insensitive.
func Fold(user string) string { return ident.Fold(user) }

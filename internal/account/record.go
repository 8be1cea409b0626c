package account

import (
	"encoding/binary"
	"fmt"
)

// State keys, relative to the partition. Every key starts with "a/".
const (
	prefixUser       = "a/u/" // + lowercased name -> user record
	prefixSession    = "a/s/" // + token digest -> session record
	prefixSessionExp = "a/x/" // + expiry (8 bytes BE) + token digest -> "" (purge index)
	keyAdminClaim    = "a/admin"
)

// recordFormat is the first byte of every stored record, so a later format
// can be told apart.
const recordFormat byte = 1

func userKey(lowerName string) []byte {
	return append([]byte(prefixUser), lowerName...)
}

func sessionKey(h [TokenHashLen]byte) []byte {
	return append([]byte(prefixSession), h[:]...)
}

func sessionExpKey(expiresMs int64, h [TokenHashLen]byte) []byte {
	b := make([]byte, 0, len(prefixSessionExp)+8+TokenHashLen)
	b = append(b, prefixSessionExp...)
	b = binary.BigEndian.AppendUint64(b, uint64(expiresMs))
	return append(b, h[:]...)
}

// userRecord is a stored user.
type userRecord struct {
	name         string // as registered
	admin        bool
	createdMs    int64
	passwordHash string
}

// Encoding: format, flags (bit 0 admin), created ms (8 bytes BE), uvarint
// len(name), name, password hash (the rest).
func encodeUser(u userRecord) []byte {
	b := make([]byte, 0, 10+binary.MaxVarintLen64+len(u.name)+len(u.passwordHash))
	var flags byte
	if u.admin {
		flags = flagAdmin
	}
	b = append(b, recordFormat, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(u.createdMs))
	b = binary.AppendUvarint(b, uint64(len(u.name)))
	b = append(b, u.name...)
	return append(b, u.passwordHash...)
}

func decodeUser(rec []byte) (userRecord, error) {
	if len(rec) < 10 || rec[0] != recordFormat || rec[1]&^flagAdmin != 0 {
		return userRecord{}, fmt.Errorf("account: corrupt user record (%d bytes)", len(rec))
	}
	u := userRecord{admin: rec[1]&flagAdmin != 0, createdMs: int64(binary.BigEndian.Uint64(rec[2:]))}
	name, rest, err := readString(rec[10:])
	if err != nil {
		return userRecord{}, fmt.Errorf("account: corrupt user record: %w", err)
	}
	u.name, u.passwordHash = name, string(rest)
	return u, nil
}

// sessionRecord is a stored session.
type sessionRecord struct {
	username  string // lowercased
	expiresMs int64
	createdMs int64
}

// Encoding: format, expires ms (8 bytes BE), created ms (8 bytes BE),
// lowercased username (the rest).
func encodeSession(s sessionRecord) []byte {
	b := make([]byte, 0, 17+len(s.username))
	b = append(b, recordFormat)
	b = binary.BigEndian.AppendUint64(b, uint64(s.expiresMs))
	b = binary.BigEndian.AppendUint64(b, uint64(s.createdMs))
	return append(b, s.username...)
}

func decodeSession(rec []byte) (sessionRecord, error) {
	if len(rec) < 18 || rec[0] != recordFormat {
		return sessionRecord{}, fmt.Errorf("account: corrupt session record (%d bytes)", len(rec))
	}
	return sessionRecord{
		expiresMs: int64(binary.BigEndian.Uint64(rec[1:])),
		createdMs: int64(binary.BigEndian.Uint64(rec[9:])),
		username:  string(rec[17:]),
	}, nil
}

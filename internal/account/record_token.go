package account

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/internal/wire"
)

// State keys of personal API tokens, relative to the partition of their
// owner.
const (
	prefixToken      = "a/t/" // + token digest -> token record
	prefixUserTokens = "a/k/" // + lowercased name + "/" + id -> token digest
)

func tokenKey(h [TokenHashLen]byte) []byte {
	return append([]byte(prefixToken), h[:]...)
}

// userTokensPrefix is the prefix of the index entries of lower's tokens.
// Names never hold '/', so one user's prefix never covers another's.
func userTokensPrefix(lower string) []byte {
	return append(append([]byte(prefixUserTokens), lower...), '/')
}

func userTokenKey(lower, id string) []byte {
	return append(userTokensPrefix(lower), id...)
}

// tokenRecord is a stored personal API token: never the token, only what
// describes it (the digest is its key).
type tokenRecord struct {
	username   string // owner, lowercased
	id, name   string
	scopes     Scopes
	createdMs  int64
	expiresMs  int64
	lastUsedMs int64 // 0: never used (as far as flushed uses tell)
}

// errCorruptToken is the cause of token record decoding errors.
var errCorruptToken = errors.New("account: corrupt token record")

// Encoding: format, created, expires, last used (8 bytes BE each), strings
// username, id, name, then the scopes as in CreateToken.
func encodeToken(t tokenRecord) []byte {
	b := make([]byte, 0, 25+len(t.username)+len(t.id)+len(t.name)+16*len(t.scopes))
	b = append(b, recordFormat)
	b = binary.BigEndian.AppendUint64(b, uint64(t.createdMs))
	b = binary.BigEndian.AppendUint64(b, uint64(t.expiresMs))
	b = binary.BigEndian.AppendUint64(b, uint64(t.lastUsedMs))
	b = wire.AppendString(b, t.username)
	b = wire.AppendString(b, t.id)
	b = wire.AppendString(b, t.name)
	return appendScopes(b, t.scopes)
}

func decodeToken(rec []byte) (tokenRecord, error) {
	if len(rec) < 25 || rec[0] != recordFormat {
		return tokenRecord{}, fmt.Errorf("%w (%d bytes)", errCorruptToken, len(rec))
	}
	t := tokenRecord{
		createdMs:  int64(binary.BigEndian.Uint64(rec[1:])),
		expiresMs:  int64(binary.BigEndian.Uint64(rec[9:])),
		lastUsedMs: int64(binary.BigEndian.Uint64(rec[17:])),
	}
	b := rec[25:]
	var err error
	if t.username, b, err = wire.String(b, errCorruptToken); err != nil {
		return tokenRecord{}, err
	}
	if t.id, b, err = wire.String(b, errCorruptToken); err != nil {
		return tokenRecord{}, err
	}
	if t.name, b, err = wire.String(b, errCorruptToken); err != nil {
		return tokenRecord{}, err
	}
	if t.scopes, b, err = readScopes(b, errCorruptToken); err != nil {
		return tokenRecord{}, err
	}
	if len(b) != 0 {
		return tokenRecord{}, fmt.Errorf("%w: %d trailing bytes", errCorruptToken, len(b))
	}
	return t, nil
}

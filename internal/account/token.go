package account

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"github.com/parley-chat/parley/internal/ident"
)

// tokenRandomBytes is the random part of a token: 192 bits.
const tokenRandomBytes = 24

// tokenRandomLen is the length of the random part once encoded.
var tokenRandomLen = base64.RawURLEncoding.EncodedLen(tokenRandomBytes)

// newToken returns a session token for the lowercased username:
// "<name>.<32 chars of unpadded base64url>". Names never contain characters
// of the random part's alphabet other than [A-Za-z0-9_-] and '.', and the
// random part never contains '.', so the last '.' splits them.
func newToken(lowerName string, rnd io.Reader) (string, error) {
	var buf [tokenRandomBytes]byte
	if _, err := io.ReadFull(rnd, buf[:]); err != nil {
		return "", fmt.Errorf("account: read random token: %w", err)
	}
	return lowerName + "." + base64.RawURLEncoding.EncodeToString(buf[:]), nil
}

// parseToken splits a token into the lowercased name of the user it belongs
// to (which routes it to its partition) and the digest under which its
// session is stored. ok is false when the token cannot be one this package
// made.
func parseToken(token string) (lowerName string, digest [TokenHashLen]byte, ok bool) {
	i := strings.LastIndexByte(token, '.')
	if i <= 0 || len(token)-i-1 != tokenRandomLen {
		return "", digest, false
	}
	if name := token[:i]; !ident.ValidUsername(name) || ident.Fold(name) != name {
		return "", digest, false
	}
	for j := i + 1; j < len(token); j++ {
		if c := token[j]; !ident.IsNameByte(c) || c == '.' {
			return "", digest, false
		}
	}
	return token[:i], tokenDigest(token), true
}

// tokenDigest is the SHA-256 of the whole token, the only form stored.
func tokenDigest(token string) [TokenHashLen]byte {
	var buf [96]byte // holds any token parseToken accepts, so hashing does not allocate
	return sha256.Sum256(append(buf[:0], token...))
}

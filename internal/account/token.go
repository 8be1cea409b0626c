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
	var buf [96]byte // holds any token parseToken or parseAPIToken accepts (at most 80 bytes), so hashing does not allocate
	return sha256.Sum256(append(buf[:0], token...))
}

// Personal API tokens (docs/API.md "API tokens") are
// "pat_<lowercased name>.<43 chars of unpadded base64url>": the prefix tells
// them apart for people and secret scanners, and the longer random part
// (256 bits) apart for parsers, so no session token parses as one and no
// API token as a session token, whatever the user's name.
const (
	apiTokenPrefix      = "pat_"
	apiTokenRandomBytes = 32
)

// apiTokenRandomLen is the length of an API token's random part once
// encoded.
var apiTokenRandomLen = base64.RawURLEncoding.EncodedLen(apiTokenRandomBytes)

// newAPIToken returns a personal API token for the lowercased username.
func newAPIToken(lowerName string, rnd io.Reader) (string, error) {
	var buf [apiTokenRandomBytes]byte
	if _, err := io.ReadFull(rnd, buf[:]); err != nil {
		return "", fmt.Errorf("account: read random token: %w", err)
	}
	return apiTokenPrefix + lowerName + "." + base64.RawURLEncoding.EncodeToString(buf[:]), nil
}

// IsAPIToken reports whether token has the form of a personal API token
// (whether or not it is a valid one).
func IsAPIToken(token string) bool {
	_, _, ok := parseAPIToken(token)
	return ok
}

// parseAPIToken is parseToken for personal API tokens: the lowercased name
// of the owner and the digest the token is stored under.
func parseAPIToken(token string) (lowerName string, digest [TokenHashLen]byte, ok bool) {
	rest, found := strings.CutPrefix(token, apiTokenPrefix)
	i := strings.LastIndexByte(rest, '.')
	if !found || i <= 0 || len(rest)-i-1 != apiTokenRandomLen {
		return "", digest, false
	}
	if name := rest[:i]; !ident.ValidUsername(name) || ident.Fold(name) != name {
		return "", digest, false
	}
	for j := i + 1; j < len(rest); j++ {
		if c := rest[j]; !ident.IsNameByte(c) || c == '.' {
			return "", digest, false
		}
	}
	return rest[:i], tokenDigest(token), true
}

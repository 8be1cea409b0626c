package pki

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
)

// tokenPrefix starts every join token, so one is recognised in a paste.
const tokenPrefix = "PRLY1"

// Token is a join token: PRLY1.<pin>.<id>.<secret>. The pin is the cluster
// CA's public-key hash, so a joiner verifies the cluster before it shows
// anything; the id names the token in listings; the secret (128 bits) is
// what the cluster checks, and it is sent only inside TLS to a node whose
// certificate chains to the pinned CA.
type Token struct {
	Pin    string
	ID     string
	Secret string
}

// NewToken makes a token for the CA with the given pin.
func NewToken(pin string) (Token, error) {
	var b [22]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Token{}, fmt.Errorf("pki: token: %w", err)
	}
	return Token{Pin: pin, ID: hex.EncodeToString(b[:6]), Secret: hex.EncodeToString(b[6:])}, nil
}

// String returns the token's one-line form.
func (t Token) String() string {
	return tokenPrefix + "." + t.Pin + "." + t.ID + "." + t.Secret
}

// ParseToken parses a join token, naming what is wrong with a bad one
// without repeating it (it may be a secret pasted in the wrong place).
func ParseToken(s string) (Token, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) != 4 || parts[0] != tokenPrefix {
		return Token{}, fmt.Errorf("join token: want %s.<ca-pin>.<id>.<secret>, as printed by the first node and kept in its <data-dir>/join-token", tokenPrefix)
	}
	t := Token{Pin: parts[1], ID: parts[2], Secret: parts[3]}
	for name, v := range map[string]struct {
		s   string
		len int
	}{"CA pin": {t.Pin, 64}, "id": {t.ID, 12}, "secret": {t.Secret, 32}} {
		if _, err := hex.DecodeString(v.s); err != nil || len(v.s) != v.len {
			return Token{}, fmt.Errorf("join token: its %s is not %d hex digits", name, v.len)
		}
	}
	return t, nil
}

// HashSecret is what the cluster stores of a token's secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte("parley join token\x00" + secret))
	return hex.EncodeToString(sum[:])
}

// SecretMatches compares a presented secret with a stored hash in constant
// time.
func SecretMatches(secret, hash string) bool {
	return subtle.ConstantTimeCompare([]byte(HashSecret(secret)), []byte(hash)) == 1
}

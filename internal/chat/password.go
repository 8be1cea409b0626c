package chat

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// HashParams are the argon2id parameters for room passwords.
type HashParams struct {
	Time      uint32 // passes over memory
	MemoryKiB uint32 // memory in KiB
	Threads   uint8  // lanes
}

// DefaultHashParams returns OWASP's argon2id recommendation: 19 MiB, two
// passes, one lane (about 20 ms per hash on current hardware).
func DefaultHashParams() HashParams {
	return HashParams{Time: 2, MemoryKiB: 19 * 1024, Threads: 1}
}

// Bounds on the parameters a stored hash may carry, so verifying one never
// costs more than this however the string was made.
const (
	maxHashTime      = 16
	maxHashMemoryKiB = 1 << 20 // 1 GiB
	saltLen          = 16
	keyLen           = 32
)

var b64 = base64.RawStdEncoding

// hashPassword returns the argon2id PHC string of password with a random salt:
// $argon2id$v=19$m=MEM,t=TIME,p=THREADS$SALT$KEY.
func hashPassword(password string, p HashParams) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("chat: salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.MemoryKiB, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// verifyPassword reports whether password matches the PHC string phc. A
// string that is not an argon2id hash within the bounds is an error.
func verifyPassword(phc, password string) (bool, error) {
	p, salt, key, err := parsePHC(phc)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// parsePHC parses an argon2id PHC string.
func parsePHC(phc string) (HashParams, []byte, []byte, error) {
	bad := func(why string) (HashParams, []byte, []byte, error) {
		return HashParams{}, nil, nil, fmt.Errorf("chat: bad password hash: %s", why)
	}
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return bad("not an argon2id PHC string")
	}
	if parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return bad("unsupported version")
	}
	var p HashParams
	for _, kv := range strings.Split(parts[3], ",") {
		name, val, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(val, 10, 32)
		if err != nil {
			return bad("parameter " + name)
		}
		switch name {
		case "m":
			p.MemoryKiB = uint32(n)
		case "t":
			p.Time = uint32(n)
		case "p":
			if n > 255 {
				return bad("threads")
			}
			p.Threads = uint8(n)
		default:
			return bad("unknown parameter " + name)
		}
	}
	if p.Time == 0 || p.Time > maxHashTime || p.Threads == 0 || p.MemoryKiB < 8*uint32(p.Threads) || p.MemoryKiB > maxHashMemoryKiB {
		return bad("parameters out of bounds")
	}
	salt, err1 := b64.DecodeString(parts[4])
	key, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(key) < 16 || len(key) > 64 {
		return bad("salt or key")
	}
	return p, salt, key, nil
}

package password

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Params are argon2id's cost parameters and the sizes of salt and key.
type Params struct {
	MemoryKiB uint32 // memory in KiB (19456, OWASP's minimum for argon2id)
	Time      uint32 // passes over memory (2)
	Threads   uint8  // lanes (1)
	SaltLen   int    // salt bytes (16)
	KeyLen    uint32 // derived key bytes (32)
}

// DefaultParams returns m=19456 KiB, t=2, p=1, a 16-byte salt and a 32-byte
// key: OWASP's recommendation, about 20 ms per hash on current hardware.
func DefaultParams() Params {
	return Params{MemoryKiB: 19456, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}
}

// Bounds on parameters, both for new hashes (Validate) and for hashes read
// back (Verify), so a corrupt or hostile record cannot make verification
// allocate or compute without limit.
const (
	maxMemoryKiB = 1 << 20 // 1 GiB
	maxTime      = 16
	minSaltLen   = 8
	maxSaltLen   = 64
	minKeyLen    = 16
	maxKeyLen    = 128
)

// Validate reports parameters outside the bounds every node verifies: a
// hash made with them could not be checked.
func (p Params) Validate() error {
	switch {
	case p.Time < 1 || p.Time > maxTime,
		p.Threads < 1,
		p.MemoryKiB < 8*uint32(p.Threads) || p.MemoryKiB > maxMemoryKiB,
		p.SaltLen < minSaltLen || p.SaltLen > maxSaltLen,
		p.KeyLen < minKeyLen || p.KeyLen > maxKeyLen:
		return fmt.Errorf("password: unusable argon2id parameters %+v", p)
	}
	return nil
}

// ErrMalformed is the error of a stored hash that is not an argon2id PHC
// string within the bounds.
var ErrMalformed = errors.New("password: malformed password hash")

var b64 = base64.RawStdEncoding

// Hash returns the PHC string of password under p with salt:
// $argon2id$v=19$m=M,t=T,p=P$salt$key, salt and key in unpadded standard
// base64. It is deterministic; Hasher.Hash draws the salt.
func Hash(password string, salt []byte, p Params) string {
	key := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, p.KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.MemoryKiB, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// Verify reports whether password matches the PHC string phc, comparing keys
// in constant time. The parameters come from the string, so hashes made
// under older defaults keep verifying. A string Hash could not have made
// within the bounds is ErrMalformed.
func Verify(phc, password string) (bool, error) {
	p, salt, key, err := Parse(phc)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, p.KeyLen)
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// Parse decodes a PHC string made by Hash: the parameters (SaltLen and
// KeyLen from the decoded lengths), the salt and the key. Anything else,
// parameters out of Validate's bounds included, is ErrMalformed.
func Parse(phc string) (p Params, salt, key []byte, err error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return p, nil, nil, ErrMalformed
	}
	fields := strings.Split(parts[3], ",")
	if len(fields) != 3 {
		return p, nil, nil, ErrMalformed
	}
	var v [3]uint64 // m, t, p in this order
	for i := range v {
		name, val, ok := strings.Cut(fields[i], "=")
		if !ok || name != "mtp"[i:i+1] {
			return p, nil, nil, ErrMalformed
		}
		if v[i], err = strconv.ParseUint(val, 10, 32); err != nil {
			return p, nil, nil, ErrMalformed
		}
	}
	salt, err1 := b64.DecodeString(parts[4])
	key, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || v[2] > 255 {
		return p, nil, nil, ErrMalformed
	}
	p = Params{MemoryKiB: uint32(v[0]), Time: uint32(v[1]), Threads: uint8(v[2]), SaltLen: len(salt), KeyLen: uint32(len(key))}
	if p.Validate() != nil {
		return Params{}, nil, nil, ErrMalformed
	}
	return p, salt, key, nil
}

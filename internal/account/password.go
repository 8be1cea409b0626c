package account

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// HashParams are argon2id's cost parameters.
type HashParams struct {
	MemoryKiB uint32 // memory in KiB (19456, OWASP's minimum for argon2id)
	Time      uint32 // passes over memory (2)
	Threads   uint8  // lanes (1)
	SaltLen   int    // salt bytes (16)
	KeyLen    uint32 // derived key bytes (32)
}

// DefaultHashParams returns m=19456 KiB, t=2, p=1, a 16-byte salt and a
// 32-byte key.
func DefaultHashParams() HashParams {
	return HashParams{MemoryKiB: 19456, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}
}

// Bounds on parameters read back from a PHC string, so a corrupt record
// cannot make verification allocate without limit.
const (
	maxMemoryKiB = 1 << 20 // 1 GiB
	maxTime      = 16
	maxKeyLen    = 128
	maxSaltLen   = 64
)

var errBadPHC = errors.New("account: malformed password hash")

// hashPassword returns the PHC string of password under p with salt:
// $argon2id$v=19$m=M,t=T,p=P$salt$key, salt and key in unpadded standard
// base64.
func hashPassword(password string, salt []byte, p HashParams) string {
	key := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, p.KeyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.MemoryKiB, p.Time, p.Threads, enc.EncodeToString(salt), enc.EncodeToString(key))
}

// parsePHC decodes an argon2id PHC string made by hashPassword.
func parsePHC(phc string) (p HashParams, salt, key []byte, err error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return p, nil, nil, errBadPHC
	}
	var m, t, threads uint64
	fields := strings.Split(parts[3], ",")
	if len(fields) != 3 {
		return p, nil, nil, errBadPHC
	}
	for i, dst := range []*uint64{&m, &t, &threads} {
		name, val, ok := strings.Cut(fields[i], "=")
		if !ok || name != "mtp"[i:i+1] {
			return p, nil, nil, errBadPHC
		}
		if *dst, err = strconv.ParseUint(val, 10, 32); err != nil {
			return p, nil, nil, errBadPHC
		}
	}
	enc := base64.RawStdEncoding
	salt, err1 := enc.DecodeString(parts[4])
	key, err2 := enc.DecodeString(parts[5])
	switch {
	case err1 != nil || err2 != nil,
		m < 8*max(threads, 1) || m > maxMemoryKiB, t < 1 || t > maxTime, threads < 1 || threads > 255,
		len(salt) < 8 || len(salt) > maxSaltLen, len(key) < 16 || len(key) > maxKeyLen:
		return p, nil, nil, errBadPHC
	}
	p = HashParams{MemoryKiB: uint32(m), Time: uint32(t), Threads: uint8(threads), SaltLen: len(salt), KeyLen: uint32(len(key))}
	return p, salt, key, nil
}

// verifyPassword reports whether password matches the PHC string, comparing
// keys in constant time. The parameters come from the string, so hashes made
// under older defaults keep verifying.
func verifyPassword(phc, password string) (bool, error) {
	p, salt, key, err := parsePHC(phc)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, p.KeyLen)
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// hasher hashes and verifies passwords with at most cap(sem) at a time, since
// each argon2id run takes MemoryKiB of memory and tens of milliseconds.
type hasher struct {
	params HashParams
	sem    chan struct{}
	rand   io.Reader
	// dummy is a hash of a random password, verified when a login names an
	// unknown user so that it takes as long as one naming a known user.
	dummy string
}

func newHasher(p HashParams, concurrency int, rnd io.Reader) (*hasher, error) {
	h := &hasher{params: p, sem: make(chan struct{}, concurrency), rand: rnd}
	salt := make([]byte, p.SaltLen)
	if _, err := io.ReadFull(rnd, salt); err != nil {
		return nil, fmt.Errorf("account: read random salt: %w", err)
	}
	h.dummy = hashPassword(rand.Text(), salt, p)
	return h, nil
}

func (h *hasher) acquire(ctx context.Context) error {
	select {
	case h.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *hasher) release() { <-h.sem }

// hash returns the PHC string of password with a fresh random salt.
func (h *hasher) hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, h.params.SaltLen)
	if _, err := io.ReadFull(h.rand, salt); err != nil {
		return "", fmt.Errorf("account: read random salt: %w", err)
	}
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	return hashPassword(password, salt, h.params), nil
}

// verify reports whether password matches phc; an empty phc (unknown user)
// verifies against the dummy hash and always reports false.
func (h *hasher) verify(ctx context.Context, phc, password string) (bool, error) {
	if err := h.acquire(ctx); err != nil {
		return false, err
	}
	defer h.release()
	if phc == "" {
		_, err := verifyPassword(h.dummy, password)
		return false, err
	}
	return verifyPassword(phc, password)
}

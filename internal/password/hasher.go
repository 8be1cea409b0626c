package password

import (
	"context"
	"crypto/rand"
	"runtime"
)

// DefaultConcurrency is the most hashes a Hasher runs at once when not told:
// 4, or GOMAXPROCS when that is smaller (argon2id with one lane keeps one
// core busy, so more at once only queue for the CPU while holding memory).
func DefaultConcurrency() int { return min(4, runtime.GOMAXPROCS(0)) }

// Hasher hashes new passwords under its Params and verifies stored hashes,
// running at most its concurrency at once: a node shares one among every
// service that hashes. It is safe for concurrent use.
type Hasher struct {
	params Params
	sem    chan struct{}
	// dummy is a hash of a random password, verified in place of a missing
	// hash (a login naming an unknown user) so that the answer takes as
	// long as one naming a known user.
	dummy string
}

// NewHasher returns a Hasher of new hashes under p running at most
// concurrency hashes at once (DefaultConcurrency when concurrency <= 0). It
// fails when p does not Validate. Building it hashes one random password
// (the stand-in for missing hashes).
func NewHasher(p Params, concurrency int) (*Hasher, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if concurrency <= 0 {
		concurrency = DefaultConcurrency()
	}
	h := &Hasher{params: p, sem: make(chan struct{}, concurrency)}
	h.dummy = Hash(rand.Text(), h.salt(), p)
	return h, nil
}

// Params returns the parameters of new hashes.
func (h *Hasher) Params() Params { return h.params }

// Concurrency returns the most hashes h runs at once.
func (h *Hasher) Concurrency() int { return cap(h.sem) }

// Hash returns the PHC string of password with a fresh random salt. It waits
// for a free slot, or fails with ctx's error.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	salt := h.salt()
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	return Hash(password, salt, h.params), nil
}

// Verify reports whether password matches phc, waiting for a free slot like
// Hash. An empty phc (no such user) verifies against the dummy hash, taking
// as long as a real one, and reports false.
func (h *Hasher) Verify(ctx context.Context, phc, password string) (bool, error) {
	if err := h.acquire(ctx); err != nil {
		return false, err
	}
	defer h.release()
	if phc == "" {
		_, err := Verify(h.dummy, password)
		return false, err
	}
	return Verify(phc, password)
}

func (h *Hasher) salt() []byte {
	salt := make([]byte, h.params.SaltLen)
	_, _ = rand.Read(salt) // never fails: it crashes the program instead
	return salt
}

func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Hasher) release() { <-h.sem }

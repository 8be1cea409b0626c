// Package passwordtest holds the one set of cheap password hashing costs for
// tests that hash passwords without being about hashing: argon2id at 64 KiB
// and one pass takes microseconds instead of tens of milliseconds, and
// protects nothing.
package passwordtest

import "github.com/parley-chat/parley/internal/password"

// Params returns the cheapest costs password.Params.Validate accepts:
// m=64 KiB, t=1, p=1, a 16-byte salt and a 32-byte key.
func Params() password.Params {
	return password.Params{MemoryKiB: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}
}

// Hasher returns a new Hasher with Params and the default concurrency.
func Hasher() *password.Hasher {
	h, err := password.NewHasher(Params(), 0)
	if err != nil {
		panic(err) // Params are valid: only a change to them gets here
	}
	return h
}

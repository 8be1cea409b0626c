package ratelimit

import "time"

// Defaults of Config.
const (
	// DefaultLeaseTTL is how long a slot count lasts at the owner after its
	// last renewal; holders renew every third of it.
	DefaultLeaseTTL = 10 * time.Second
	// DefaultMaxKeys bounds the keys a Table, Stash or Holdings remembers.
	DefaultMaxKeys = 1 << 17
	// maxBatch caps the tokens one request takes ahead of need.
	maxBatch = 16
)

// Config names the limits and their settings. Limits that are not named,
// or named with an off Rate or a count of 0, limit nothing.
type Config struct {
	// Rates are the token-bucket limits by name.
	Rates map[string]Rate
	// Slots are the concurrency limits by name: how many slots one key may
	// hold at once across the cluster.
	Slots map[string]int
	// LeaseTTL is how long a holder's slot count lasts without renewal
	// (DefaultLeaseTTL).
	LeaseTTL time.Duration
	// MaxKeys bounds the keys remembered (DefaultMaxKeys); past it, keys
	// that carry no information are forgotten first, and if none is, all
	// are, which errs towards allowing.
	MaxKeys int
}

// Share returns the rates one node of n applies alone while the owner of a
// key cannot be reached: each rate's N divided by n (at least 1) over the
// same period, so that n nodes deciding alone allow together about what the
// owner would, never n times it. Concurrency caps are kept as they are.
func (c Config) Share(n int) Config {
	n = max(n, 1)
	out := c
	out.Rates = make(map[string]Rate, len(c.Rates))
	for name, r := range c.Rates {
		if !r.Off() {
			r.N = max(r.N/n, 1)
		}
		out.Rates[name] = r
	}
	return out
}

func (c Config) withDefaults() Config {
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.MaxKeys <= 0 {
		c.MaxKeys = DefaultMaxKeys
	}
	return c
}

// rate returns the rate of limit and whether it limits anything.
func (c Config) rate(limit string) (Rate, bool) {
	r, ok := c.Rates[limit]
	return r, ok && !r.Off()
}

// slots returns the concurrency cap of limit and whether it limits
// anything.
func (c Config) slots(limit string) (int, bool) {
	n, ok := c.Slots[limit]
	return n, ok && n > 0
}

// batchCap is the most tokens of limit one request takes ahead of need: a
// sixteenth of the burst, between 1 and maxBatch, so that tokens parked on
// one node are a small part of what the key may spend.
func (c Config) batchCap(limit string) int {
	r, ok := c.rate(limit)
	if !ok {
		return 1
	}
	return min(max(r.N/16, 1), maxBatch)
}

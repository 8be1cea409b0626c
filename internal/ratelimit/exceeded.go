package ratelimit

import (
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/errs"
)

// Exceeded is the cause carried by an errs.RateLimited refusal: the limit
// that refused and how long to wait before trying again.
type Exceeded struct {
	Limit string
	Wait  time.Duration
}

// Error implements error.
func (e *Exceeded) Error() string {
	return fmt.Sprintf("limit %s exceeded; retry in %v", e.Limit, e.Wait)
}

// RetryAfter is how long to wait before trying again in whole seconds
// (what an HTTP Retry-After can say), rounded up, at least one.
func (e *Exceeded) RetryAfter() time.Duration {
	return max((e.Wait+time.Second-1)/time.Second*time.Second, time.Second)
}

// Refusal returns the errs.RateLimited error of limit with its setting
// (a Rate or a count), naming both, with an *Exceeded as its cause.
func Refusal(limit string, setting any, wait time.Duration) *errs.Error {
	ex := &Exceeded{Limit: limit, Wait: wait}
	secs := int(ex.RetryAfter() / time.Second)
	if r, ok := setting.(Rate); ok {
		return errs.Wrap(errs.RateLimited, ex, "limit %q reached (%s per %s); retry in %d s", limit, r, scope(limit), secs)
	}
	return errs.Wrap(errs.RateLimited, ex, "limit %q reached (%v at once per %s); retry in %d s", limit, setting, scope(limit), secs)
}

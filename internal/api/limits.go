package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/parley-chat/parley/internal/ratelimit"
)

// Limiter enforces the per-user limits (docs/LIMITS.md). Both methods
// return nil or an errs.RateLimited error, answered 429 with a Retry-After
// taken from the error (retryAfterOf). Limit names are ratelimit's.
type Limiter interface {
	// Take takes one token of the named rate limit for key.
	Take(ctx context.Context, limit, key string) error
	// Hold takes one slot of the named concurrency limit for key until
	// release is called.
	Hold(ctx context.Context, limit, key string) (release func(), err error)
}

var _ Limiter = (*ratelimit.Local)(nil)

// take takes one token of limit for the signed-in user of r; without a
// Limiter or a user it limits nothing.
func (s *Server) take(r *http.Request, limit string) error {
	user := identity(r).User
	if s.limiter == nil || user == "" {
		return nil
	}
	return s.limiter.Take(r.Context(), limit, user)
}

// hold takes one slot of limit for user; release gives it back. release
// is never nil, even with an error (then it does nothing).
func (s *Server) hold(ctx context.Context, limit, user string) (release func(), err error) {
	if s.limiter == nil || user == "" {
		return func() {}, nil
	}
	release, err = s.limiter.Hold(ctx, limit, user)
	if err != nil || release == nil {
		return func() {}, err
	}
	return release, nil
}

// retryAfterOf is the Retry-After of err in whole seconds: the wait an
// error past a limit names, else 1.
func retryAfterOf(err error) string {
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		return strconv.Itoa(max(int((ra.RetryAfter()+time.Second-1)/time.Second), 1))
	}
	return "1"
}

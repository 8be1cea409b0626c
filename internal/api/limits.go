package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/audit"
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
	err := s.limiter.Take(r.Context(), limit, user)
	if err != nil {
		s.auditLimited(s.clientIP(r), limit, user)
	}
	return err
}

// hold takes one slot of limit for user; release gives it back. release
// is never nil, even with an error (then it does nothing).
func (s *Server) hold(ctx context.Context, limit, user string) (release func(), err error) {
	if s.limiter == nil || user == "" {
		return func() {}, nil
	}
	release, err = s.limiter.Hold(ctx, limit, user)
	if err != nil {
		s.auditLimited("", limit, user)
	}
	if err != nil || release == nil {
		return func() {}, err
	}
	return release, nil
}

// limitAuditEvery is the least time between two audited refusals of one
// user's limit: a flood is one event, not thousands.
const limitAuditEvery = 10 * time.Second

// maxLimitAudits bounds the refusals remembered for throttling; past it
// they are forgotten at once (erring towards auditing more).
const maxLimitAudits = 1 << 14

// limitAudits throttles the audit of refusals by limit and user.
type limitAudits struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// auditLimited records that user went past limit, at most once every
// limitAuditEvery per user and limit.
func (s *Server) auditLimited(remote, limit, user string) {
	now := time.Now()
	key := limit + "\x00" + user
	s.limitAudits.mu.Lock()
	if s.limitAudits.last == nil || len(s.limitAudits.last) >= maxLimitAudits {
		s.limitAudits.last = map[string]time.Time{}
	}
	if now.Sub(s.limitAudits.last[key]) < limitAuditEvery {
		s.limitAudits.mu.Unlock()
		return
	}
	s.limitAudits.last[key] = now
	s.limitAudits.mu.Unlock()
	s.audit.Record(audit.Event{Kind: audit.KindRateLimited, Outcome: audit.Refused, Actor: user, Remote: remote, Target: limit,
		Detail: "over the " + limit + " limit (audited at most once every " + limitAuditEvery.String() + " per user and limit)"})
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

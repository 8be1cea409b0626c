package stream

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/errs"
)

// Guard defaults and bounds.
const (
	// DefaultRecheck is how often a Guard checks each token again. The
	// account service trusts a cached answer for at most its CacheTTL (500
	// ms by default), so a session revoked through another node ends the
	// streams here within CacheTTL + DefaultRecheck: the second a logout
	// promises.
	DefaultRecheck = 500 * time.Millisecond
	// DefaultGuardChecks caps the checks a Guard runs at once.
	DefaultGuardChecks = 16
	// guardCheckTimeout bounds one check.
	guardCheckTimeout = 5 * time.Second
	// guardLogEvery spaces the warnings about failing checks.
	guardLogEvery = 10 * time.Second
)

// GuardConfig configures a Guard.
type GuardConfig struct {
	// Check reports whether token still opens a session: nil, or an error
	// with code errs.Unauthorized once the session ended (signed out,
	// revoked, expired, unknown). Any other error (the session's partition
	// cannot be read) leaves the token's streams open until a later check
	// decides. Required.
	Check func(ctx context.Context, token string) error
	// Interval is how often each distinct token is checked, however many
	// streams it holds open (DefaultRecheck).
	Interval time.Duration
	// Concurrency caps the checks in flight at once (DefaultGuardChecks).
	Concurrency int
	// Logger receives a warning, at most every 10 s, while checks fail
	// other than unauthorized. Default: discard.
	Logger *slog.Logger
}

// Guard keeps a node's open streams within their sessions. Each stream is
// watched under its bearer token; the Guard ends the streams of a token
//   - at once when told the session ended (Revoke: a logout through this
//     node, a subscribe frame whose check was refused);
//   - when a periodic check finds the token refused, one check per distinct
//     token per Interval;
//   - at the session's expiry, by one timer per token.
//
// Ending a stream calls the end function it was watched with, once. The
// Guard's one goroutine runs while it watches at least one stream and
// stops one Interval after the last one left. It is safe for concurrent
// use.
type Guard struct {
	cfg GuardConfig

	mu      sync.Mutex
	tokens  map[string]*guardedToken
	running bool      // the check loop runs
	warned  time.Time // the last warning about failing checks; the loop's own
}

// guardedToken is the streams open under one token. Once removed from
// Guard.tokens it is never changed again.
type guardedToken struct {
	ends  map[*guardedStream]struct{}
	timer *time.Timer // ends them at the session's expiry; nil when unknown
}

// guardedStream is one watched stream.
type guardedStream struct{ end func() }

// NewGuard returns a Guard checking tokens with cfg.Check.
func NewGuard(cfg GuardConfig) *Guard {
	if cfg.Check == nil {
		panic("stream: GuardConfig.Check is required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultRecheck
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultGuardChecks
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Guard{cfg: cfg, tokens: map[string]*guardedToken{}}
}

// Watch guards a stream opened with token, whose session ends at expires
// (zero when unknown). end is called at most once, on another goroutine,
// when the session ends; it must not block. The stop function returned
// ends the watch (call it when the stream closes); end may still be
// running, or start, while stop runs.
func (g *Guard) Watch(token string, expires time.Time, end func()) (stop func()) {
	w := &guardedStream{end: end}
	g.mu.Lock()
	defer g.mu.Unlock()
	gt := g.tokens[token]
	if gt == nil {
		gt = &guardedToken{ends: map[*guardedStream]struct{}{}}
		if !expires.IsZero() {
			gt.timer = time.AfterFunc(time.Until(expires), func() { g.Revoke(token) })
		}
		g.tokens[token] = gt
	}
	gt.ends[w] = struct{}{}
	if !g.running {
		g.running = true
		go g.loop()
	}
	return func() { g.unwatch(token, gt, w) }
}

// unwatch removes w from gt, and gt when it was its last stream.
func (g *Guard) unwatch(token string, gt *guardedToken, w *guardedStream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tokens[token] != gt {
		return // revoked already
	}
	delete(gt.ends, w)
	if len(gt.ends) == 0 {
		delete(g.tokens, token)
		if gt.timer != nil {
			gt.timer.Stop()
		}
	}
}

// Revoke ends every stream watched under token at once: its session ended.
func (g *Guard) Revoke(token string) {
	g.mu.Lock()
	gt := g.tokens[token]
	delete(g.tokens, token)
	g.mu.Unlock()
	if gt == nil {
		return
	}
	if gt.timer != nil {
		gt.timer.Stop()
	}
	for w := range gt.ends {
		w.end()
	}
}

// Watching returns how many distinct tokens and streams the Guard watches.
func (g *Guard) Watching() (tokens, streams int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, gt := range g.tokens {
		streams += len(gt.ends)
	}
	return len(g.tokens), streams
}

// loop checks every watched token each Interval until none is left.
func (g *Guard) loop() {
	t := time.NewTicker(g.cfg.Interval)
	defer t.Stop()
	for range t.C {
		tokens := g.roundTokens()
		if tokens == nil {
			return
		}
		g.round(tokens)
	}
}

// roundTokens returns the tokens to check, or nil, marking the loop
// stopped, when there are none.
func (g *Guard) roundTokens() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.tokens) == 0 {
		g.running = false
		return nil
	}
	out := make([]string, 0, len(g.tokens))
	for token := range g.tokens {
		out = append(out, token)
	}
	return out
}

// round checks tokens, at most Concurrency at once, and revokes those
// refused.
func (g *Guard) round(tokens []string) {
	sem := make(chan struct{}, g.cfg.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed, firstErr := 0, error(nil)
	for _, token := range tokens {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := context.WithTimeout(context.Background(), guardCheckTimeout)
			err := g.cfg.Check(ctx, token)
			cancel()
			switch {
			case err == nil:
			case errs.CodeOf(err) == errs.Unauthorized:
				g.Revoke(token)
			default:
				mu.Lock()
				if failed++; firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failed > 0 && time.Since(g.warned) >= guardLogEvery {
		g.warned = time.Now()
		g.cfg.Logger.Warn("stream session checks failed; those streams stay open until a check answers",
			"failed", failed, "tokens", len(tokens), "err", firstErr)
	}
}

package api

import (
	"context"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/ratelimit"
)

// hookGuessWindow is how long a client address that sent a wrong hook
// secret is counted against the per-address sign-in limit.
const hookGuessWindow = time.Minute

// maxHookGuessers bounds the addresses hookGuesses remembers; past it the
// oldest are forgotten first (a flood of addresses cannot grow the map).
const maxHookGuessers = 1 << 14

// hookGuesses remembers, on this node, the client addresses that sent a
// wrong incoming-webhook key or secret lately. Every hook post from such an
// address takes one attempt of the per-address sign-in limit
// (ratelimit.LoginsPerAddress, counted across the cluster) before its
// secret is checked, so guessing runs at the sign-in rate whatever the
// answers; an address that never sent a wrong secret is not counted, so a
// busy bot with the right URL is limited only per hook. It is safe for
// concurrent use.
type hookGuesses struct {
	mu   sync.Mutex
	last map[string]time.Time // address -> its latest wrong secret
}

// suspect reports whether addr sent a wrong secret within the window.
func (g *hookGuesses) suspect(addr string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.last[addr]
	if ok && now.Sub(t) >= hookGuessWindow {
		delete(g.last, addr)
		return false
	}
	return ok
}

// failed records a wrong secret from addr.
func (g *hookGuesses) failed(addr string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		g.last = map[string]time.Time{}
	}
	if len(g.last) >= maxHookGuessers {
		for a, t := range g.last {
			if now.Sub(t) >= hookGuessWindow || len(g.last) >= maxHookGuessers {
				delete(g.last, a)
			}
		}
	}
	g.last[addr] = now
}

// takeHookGuess takes one sign-in attempt of addr when it guessed wrong
// lately, or returns the 429 refusal.
func (s *Server) takeHookGuess(ctx context.Context, addr string) error {
	if s.limiter == nil || !s.hookGuesses.suspect(addr, time.Now()) {
		return nil
	}
	return s.limiter.Take(ctx, ratelimit.LoginsPerAddress, addr)
}

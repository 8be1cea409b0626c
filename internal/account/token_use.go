package account

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// DefaultTokenUseFlush is how often a node records the uses of personal
// API tokens it saw (Config.TokenUseFlush).
const DefaultTokenUseFlush = time.Minute

// maxPendingUses bounds the tokens whose uses a node keeps between
// flushes; past it, uses of further tokens are not recorded until the next
// flush.
const maxPendingUses = 1 << 16

// useTracker keeps the latest use of each personal API token this node
// authenticated since the last flush, so that a use costs a map update and
// not a Raft write: Flush writes them in batches. It is safe for
// concurrent use.
type useTracker struct {
	mu      sync.Mutex
	pending map[[TokenHashLen]byte]pendingUse
}

// pendingUse is one token's latest unflushed use.
type pendingUse struct {
	lower, id string
	atMs      int64
}

func newUseTracker() *useTracker {
	return &useTracker{pending: map[[TokenHashLen]byte]pendingUse{}}
}

// note records a use of the token with digest d at atMs.
func (u *useTracker) note(d [TokenHashLen]byte, lower, id string, atMs int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	p, ok := u.pending[d]
	if !ok && len(u.pending) >= maxPendingUses {
		return
	}
	if !ok || atMs > p.atMs {
		u.pending[d] = pendingUse{lower: lower, id: id, atMs: atMs}
	}
}

// take returns the pending uses and starts afresh.
func (u *useTracker) take() map[[TokenHashLen]byte]pendingUse {
	u.mu.Lock()
	defer u.mu.Unlock()
	p := u.pending
	u.pending = make(map[[TokenHashLen]byte]pendingUse, len(p))
	return p
}

// restore puts back uses take returned that could not be written, keeping
// the later of each token's.
func (u *useTracker) restore(p map[[TokenHashLen]byte]pendingUse) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for d, use := range p {
		if cur, ok := u.pending[d]; !ok || cur.atMs < use.atMs {
			u.pending[d] = use
		}
	}
}

// latestOf returns the pending use of the token id of lower (0: none).
func (u *useTracker) latestOf(lower, id string) int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, p := range u.pending {
		if p.lower == lower && p.id == id {
			return p.atMs
		}
	}
	return 0
}

// forget drops the pending use of a revoked token.
func (u *useTracker) forget(d [TokenHashLen]byte) {
	u.mu.Lock()
	delete(u.pending, d)
	u.mu.Unlock()
}

// FlushTokenUses writes the token uses this node saw since the last flush:
// one TouchTokens command per partition (more past MaxTouchesPerCommand
// tokens), proposed concurrently, so a token's last use costs at most one
// Raft write per flush whatever its request rate. Uses that fail to be
// written are kept for the next flush. Nothing is written while some node
// runs a build older than TokenProtocol.
func (s *Service) FlushTokenUses(ctx context.Context) error {
	if s.tokensReady() != nil {
		return nil
	}
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	pending := s.uses.take()
	if len(pending) == 0 {
		return nil
	}
	byPart := map[uint64][][TokenHashLen]byte{}
	for d, p := range pending {
		part := s.r.PartitionOf(p.lower)
		byPart[part] = append(byPart[part], d)
	}
	type batch struct {
		partition uint64
		digests   [][TokenHashLen]byte
	}
	var batches []batch
	for _, part := range slices.Sorted(maps.Keys(byPart)) {
		ds := byPart[part]
		for len(ds) > 0 {
			n := min(len(ds), MaxTouchesPerCommand)
			batches = append(batches, batch{part, ds[:n]})
			ds = ds[n:]
		}
	}
	failed := make([]error, len(batches))
	var wg sync.WaitGroup
	for i, b := range batches {
		wg.Go(func() {
			c := TouchTokens{Uses: make([]TokenUse, len(b.digests))}
			for j, d := range b.digests {
				c.Uses[j] = TokenUse{TokenHash: d, AtMs: pending[d].atMs}
			}
			res, err := s.r.Propose(ctx, b.partition, "", EncodeTouchTokens(c))
			if err == nil {
				err = decodeTouchResult(res)
			}
			failed[i] = err
		})
	}
	wg.Wait()
	var errList []error
	for i, err := range failed {
		if err == nil {
			for _, d := range batches[i].digests {
				delete(pending, d)
			}
			continue
		}
		errList = append(errList, fmt.Errorf("partition %d: %w", batches[i].partition, err))
	}
	if len(errList) > 0 {
		s.uses.restore(pending)
		return fmt.Errorf("account: record token uses: %w", errors.Join(errList...))
	}
	return nil
}

// finalFlushTimeout bounds the flush RunTokenUseFlusher makes when its
// context ends: a node shutting down (perhaps with its peers already gone,
// so no quorum) must not wait a whole flush interval for it.
const finalFlushTimeout = 2 * time.Second

// RunTokenUseFlusher calls FlushTokenUses every Config.TokenUseFlush until
// ctx ends, then once more (bounded by finalFlushTimeout, or the interval
// when that is shorter). Failures go to warn,
// which the caller rate-limits or logs; their uses are retried by the next
// flush. A crash loses at most one interval's uses.
func (s *Service) RunTokenUseFlusher(ctx context.Context, warn func(error)) {
	t := time.NewTicker(s.cfg.TokenUseFlush)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := s.FlushTokenUses(ctx); err != nil {
				warn(err)
			}
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(finalFlushTimeout, s.cfg.TokenUseFlush))
			if err := s.FlushTokenUses(final); err != nil {
				warn(err)
			}
			cancel()
			return
		}
	}
}

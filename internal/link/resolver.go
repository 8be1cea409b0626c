package link

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// Resolve returns the URL a code redirects to, for GET /s/{code}, and counts
// the redirect. It answers from the node-local cache when it can; on a miss
// it reads the local replica (stale) and, when that replica lacks the code or
// is more than MaxStale behind, reads linearizably, so a link works the
// moment it is created on every node. Unknown codes are never cached.
//
// Staleness bound: a cached URL is served until CacheTTL (at most 2 s) after
// the state it was read from, so a link deleted through another node stops
// resolving here at most CacheTTL after the delete committed (plus the error
// in the replica's own staleness estimate), well within the 5 s the product
// promises; through this node it stops at once.
func (s *Service) Resolve(ctx context.Context, code string) (string, error) {
	if !validCode(code) {
		return "", errs.New(errs.NotFound, "link not found")
	}
	if url, ok := s.cache.Get(code); ok {
		s.countHit(code)
		return url, nil
	}
	p := s.r.PartitionOf(code)
	start := s.cfg.Now()
	url, found, staleMs, err := s.read(ctx, p, code, true)
	if err != nil || !found || time.Duration(staleMs)*time.Millisecond > s.cfg.MaxStale {
		start = s.cfg.Now()
		url, found, staleMs, err = s.read(ctx, p, code, false)
		if err != nil {
			return "", fmt.Errorf("link: resolve %q: %w", code, err)
		}
	}
	if !found {
		return "", errs.New(errs.NotFound, "link not found")
	}
	s.cache.Put(code, url, start.Add(s.cfg.CacheTTL-time.Duration(max(staleMs, 0))*time.Millisecond))
	s.countHit(code)
	return url, nil
}

func (s *Service) read(ctx context.Context, p uint64, code string, stale bool) (url string, found bool, staleMs int64, err error) {
	staleMs, err = s.r.Read(ctx, p, stale, func(r state.Reader) error {
		rec, ok, err := r.Get(linkKey(code))
		if err != nil || !ok {
			return err
		}
		rc, err := decodeRecord(rec)
		if err != nil {
			return err
		}
		url, found = rc.url, true
		return nil
	})
	return url, found, staleMs, err
}

// CacheStats returns the resolver cache's counters.
func (s *Service) CacheStats() CacheStats { return s.cache.Stats() }

// countHit adds one redirect of code to the counts the next Flush proposes.
func (s *Service) countHit(code string) {
	s.hitsMu.Lock()
	if n, ok := s.pending[code]; ok {
		s.pending[code] = n + 1
	} else {
		s.pending[strings.Clone(code)] = 1 // code may point into a request's memory
	}
	s.hitsMu.Unlock()
}

// hitsBatch is one AddHits command for one partition, with the dedup key
// that makes its retries count once.
type hitsBatch struct {
	partition uint64
	dedupKey  string
	cmd       []byte
}

// Flush proposes the redirects counted since the last Flush: one AddHits
// command per partition (several when a partition has more than
// MaxHitsPerCommand codes), proposed concurrently. A command that fails is
// kept with its dedup key and proposed again, first, by the next Flush, so
// its hits count once even when the failure hid a success (within the dedup
// window); at most FlushRetention such commands are kept. Flushes run one at
// a time; the error joins every failure.
func (s *Service) Flush(ctx context.Context) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.hitsMu.Lock()
	// Take the counted hits; an empty map stays with countHit, so pending
	// never aliases a map that is written while batches reads it.
	var pending map[string]uint64
	if len(s.pending) > 0 {
		pending, s.pending = s.pending, make(map[string]uint64, len(s.pending))
	}
	s.hitsMu.Unlock()

	fresh, err := s.batches(pending)
	if err != nil {
		s.hitsMu.Lock()
		for code, n := range pending {
			s.pending[code] += n
		}
		s.hitsMu.Unlock()
		return err
	}
	batches := append(s.retry, fresh...)
	s.retry = nil
	failed := make([]error, len(batches))
	var wg sync.WaitGroup
	for i, b := range batches {
		wg.Go(func() {
			res, err := s.r.Propose(ctx, b.partition, b.dedupKey, b.cmd)
			if err == nil {
				_, err = decodeHitsResult(res)
			}
			failed[i] = err
		})
	}
	wg.Wait()
	var errList []error
	for i, err := range failed {
		if err == nil {
			continue
		}
		errList = append(errList, fmt.Errorf("partition %d: %w", batches[i].partition, err))
		if !errs.Is(err, errs.Invalid) { // an invalid command would fail forever
			s.retry = append(s.retry, batches[i])
		}
	}
	if drop := len(s.retry) - s.cfg.FlushRetention; drop > 0 {
		s.retry = slices.Delete(s.retry, 0, drop)
		errList = append(errList, fmt.Errorf("dropped the hit counts of %d failed flushes", drop))
	}
	if len(errList) > 0 {
		return fmt.Errorf("link: flush hits: %w", errors.Join(errList...))
	}
	return nil
}

// batches groups counted hits by partition into AddHits commands of at most
// MaxHitsPerCommand sorted codes, each with a fresh random dedup key.
func (s *Service) batches(pending map[string]uint64) ([]hitsBatch, error) {
	byPart := map[uint64][]CodeHits{}
	for code, n := range pending {
		p := s.r.PartitionOf(code)
		byPart[p] = append(byPart[p], CodeHits{Code: code, N: n})
	}
	var out []hitsBatch
	for _, p := range slices.Sorted(maps.Keys(byPart)) {
		hits := byPart[p]
		slices.SortFunc(hits, func(a, b CodeHits) int { return strings.Compare(a.Code, b.Code) })
		for chunk := range slices.Chunk(hits, s.cfg.MaxHitsPerCommand) {
			var id [16]byte
			if _, err := io.ReadFull(s.cfg.Rand, id[:]); err != nil {
				return nil, fmt.Errorf("link: read random flush id: %w", err)
			}
			out = append(out, hitsBatch{
				partition: p,
				dedupKey:  string([]byte{Tag, opAddHits}) + hex.EncodeToString(id[:]),
				cmd:       EncodeAddHits(AddHits{Hits: chunk}),
			})
		}
	}
	return out, nil
}

// RunFlusher calls Flush every interval until ctx ends, then flushes once
// more (bounded by one interval) and returns. A crash loses at most one
// interval's redirect counts. Failures are logged at Warn, at most once per
// minute; their counts are retried by the next Flush.
func (s *Service) RunFlusher(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var lastWarn time.Time
	flush := func(ctx context.Context) {
		if err := s.Flush(ctx); err != nil && time.Since(lastWarn) >= time.Minute {
			lastWarn = time.Now()
			s.log.Warn("link: flushing redirect counts failed; will retry", "err", err)
		}
	}
	for {
		select {
		case <-t.C:
			flush(ctx)
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), every)
			flush(final)
			cancel()
			return
		}
	}
}

package link

import (
	"cmp"
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
)

// visitBatch is one AddVisits command for one partition, with the dedup key
// (the flush id) that makes its retries count once, and each link's total
// visits in it.
type visitBatch struct {
	partition uint64
	dedupKey  string
	cmd       []byte
	totals    []CodeHits
}

// Flush proposes the visits counted since the last Flush: one AddVisits
// command per partition (several when a partition has more than
// MaxHitsPerCommand links or MaxFlushBytes of counts), proposed
// concurrently. Each command has a fresh random flush id as its dedup key;
// a command that fails is kept with it and proposed again, first, by the
// next Flush, so its visits count once even when the failure hid a success
// (within the dedup window); at most FlushRetention such commands are kept.
// Flushes run one at a time; the error joins every failure.
func (s *Service) Flush(ctx context.Context) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	pending := s.visits.take()
	fresh, err := s.batches(pending)
	if err != nil {
		s.visits.restore(pending)
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
			for _, code := range s.visits.flushed(batches[i].totals) {
				s.cache.Delete(code) // its cached count misses these visits
			}
			continue
		}
		errList = append(errList, fmt.Errorf("partition %d: %w", batches[i].partition, err))
		if !errs.Is(err, errs.Invalid) { // an invalid command would fail forever
			s.retry = append(s.retry, batches[i])
		}
	}
	if drop := len(s.retry) - s.cfg.FlushRetention; drop > 0 {
		s.retry = slices.Delete(s.retry, 0, drop)
		errList = append(errList, fmt.Errorf("dropped the visit counts of %d failed flushes", drop))
	}
	if len(errList) > 0 {
		return fmt.Errorf("link: flush visits: %w", errors.Join(errList...))
	}
	return nil
}

// batches groups counted visits by partition and link into AddVisits
// commands of at most MaxHitsPerCommand links and about MaxFlushBytes,
// each with a fresh random flush id.
func (s *Service) batches(pending map[visitKey]uint64) ([]visitBatch, error) {
	byLink := map[string]*linkTally{}
	for k, n := range pending {
		t := byLink[k.code]
		if t == nil {
			t = newLinkTally()
			byLink[k.code] = t
		}
		t.add(k, n)
	}
	byPart := map[uint64][]LinkVisits{}
	for code, t := range byLink {
		p := s.r.PartitionOf(code)
		byPart[p] = append(byPart[p], t.visits(code))
	}
	var out []visitBatch
	for _, p := range slices.Sorted(maps.Keys(byPart)) {
		links := byPart[p]
		slices.SortFunc(links, func(a, b LinkVisits) int { return strings.Compare(a.Code, b.Code) })
		for len(links) > 0 {
			n, size := 0, 0
			for n < len(links) && n < s.cfg.MaxHitsPerCommand && (n == 0 || size < s.cfg.MaxFlushBytes) {
				size += len(appendLinkVisits(nil, links[n]))
				n++
			}
			b, err := s.batch(p, links[:n])
			if err != nil {
				return nil, err
			}
			out = append(out, b)
			links = links[n:]
		}
	}
	return out, nil
}

func (s *Service) batch(p uint64, links []LinkVisits) (visitBatch, error) {
	var id [16]byte
	if _, err := io.ReadFull(s.cfg.Rand, id[:]); err != nil {
		return visitBatch{}, fmt.Errorf("link: read random flush id: %w", err)
	}
	b := visitBatch{
		partition: p,
		dedupKey:  string([]byte{Tag, opAddVisits}) + hex.EncodeToString(id[:]),
		cmd:       EncodeAddVisits(AddVisits{Links: links}),
	}
	for _, lv := range links {
		all, _ := lv.total()
		b.totals = append(b.totals, CodeHits{Code: lv.Code, N: all})
	}
	return b, nil
}

// linkTally sums one link's pending visits.
type linkTally struct {
	days                        map[uint32]*DayVisits
	referrers, browsers, system map[string]uint64
}

func newLinkTally() *linkTally {
	return &linkTally{days: map[uint32]*DayVisits{}, referrers: map[string]uint64{}, browsers: map[string]uint64{}, system: map[string]uint64{}}
}

func (t *linkTally) add(k visitKey, n uint64) {
	d := t.days[k.day]
	if d == nil {
		d = &DayVisits{Day: k.day}
		t.days[k.day] = d
	}
	if k.bot {
		d.Bots = addSat(d.Bots, n)
		return
	}
	d.Humans = addSat(d.Humans, n)
	if k.referrer != "" {
		t.referrers[k.referrer] = addSat(t.referrers[k.referrer], n)
	}
	t.browsers[k.browser] = addSat(t.browsers[k.browser], n)
	t.system[k.system] = addSat(t.system[k.system], n)
}

// visits returns the tally as a command carries it. Referrers past the
// MaxReferrers most visited fold into OtherReferrers, which bounds one
// link's part of a command.
func (t *linkTally) visits(code string) LinkVisits {
	lv := LinkVisits{Code: code}
	for _, day := range slices.Sorted(maps.Keys(t.days)) {
		lv.Days = append(lv.Days, *t.days[day])
	}
	refs := counts(t.referrers)
	if len(refs) > MaxReferrers {
		slices.SortFunc(refs, func(a, b Count) int { return cmp.Compare(b.N, a.N) })
		var other uint64
		for _, c := range refs[MaxReferrers:] {
			other = addSat(other, c.N)
		}
		refs = append(refs[:MaxReferrers], Count{Name: OtherReferrers, N: other})
		merged := map[string]uint64{}
		for _, c := range refs {
			merged[c.Name] = addSat(merged[c.Name], c.N)
		}
		refs = counts(merged)
	}
	lv.Referrers, lv.Browsers, lv.Systems = refs, counts(t.browsers), counts(t.system)
	return lv
}

// counts returns m's non-zero entries sorted by name.
func counts(m map[string]uint64) []Count {
	var out []Count
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if m[name] > 0 {
			out = append(out, Count{Name: name, N: m[name]})
		}
	}
	return out
}

// RunFlusher calls Flush every interval until ctx ends, then flushes once
// more (bounded by one interval) and returns. A crash loses the visits
// counted since the last flush: at most one interval's, plus those of
// flushes still failing. Failures are logged at Warn, at most once per
// minute; their counts are retried by the next Flush.
func (s *Service) RunFlusher(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var lastWarn time.Time
	flush := func(ctx context.Context) {
		if err := s.Flush(ctx); err != nil && time.Since(lastWarn) >= time.Minute {
			lastWarn = time.Now()
			s.log.Warn("link: flushing visit counts failed; will retry", "err", err)
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

package link

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// Defaults of Config.
const (
	DefaultMaxURL            = 2048
	DefaultCacheSize         = 10000
	DefaultCachePolicy       = LRU
	DefaultCacheTTL          = 2 * time.Second
	MaxCacheTTL              = 2 * time.Second // so a deleted link stops within 5 s
	DefaultMaxStale          = time.Second
	DefaultCodeAttempts      = 5
	DefaultMaxMine           = 1000
	DefaultMaxHitsPerCommand = 1024
	DefaultMaxFlushBytes     = 256 << 10
	DefaultMaxPendingVisits  = 100_000
	DefaultFlushRetention    = 256
)

// Config tunes a Service. Zero fields take the defaults.
type Config struct {
	// MaxURL is the longest URL in bytes (2048).
	MaxURL int
	// CacheSize is the resolver cache's entries (10000), spread over up to
	// 16 shards by code.
	CacheSize int
	// CachePolicy is the resolver cache's eviction policy (lru), applied
	// within each shard.
	CachePolicy Policy
	// CacheTTL is how long a resolved URL is served from the cache, counted
	// from the start of the read that found it minus that read's staleness
	// (2 s, at most MaxCacheTTL).
	CacheTTL time.Duration
	// MaxStale is the staleness above which Resolve does not trust a local
	// read and reads linearizably instead (1 s, less than CacheTTL).
	MaxStale time.Duration
	// CodeAttempts is how many generated codes Create tries before giving
	// up on collisions (5).
	CodeAttempts int
	// MaxMine caps the links Mine returns (1000).
	MaxMine int
	// MaxHitsPerCommand caps the links one visit-count command carries
	// (1024).
	MaxHitsPerCommand int
	// MaxFlushBytes is the size past which a visit-count command takes no
	// further link (256 KiB); one link's part is at most a few KiB.
	MaxFlushBytes int
	// MaxPendingVisits bounds the distinct visit counters kept in memory
	// between flushes (100000); past it, new visits are counted without
	// referrer, browser and OS.
	MaxPendingVisits int
	// SelfURLs returns the bases this cluster serves short links on: its
	// public URL and its members' HTTP addresses. A long URL under /s/ on
	// one of them is refused (it would loop). Nil: no check.
	SelfURLs func() []string
	// RootURL, when set, is the base of a short domain that serves codes
	// at its root ("https://s.example", --links-url): a long URL anywhere
	// on its host is refused (it would loop).
	RootURL string
	// SelfRoots returns the bases where every path is a short link: the
	// members' links listeners ("10.0.0.3:8080", --links), each matching
	// its port only. A long URL anywhere on one of them is refused (it
	// would loop). Nil: none.
	SelfRoots func() []string
	// FlushRetention caps the hit-count commands kept for retry after failed
	// flushes (256); past it the oldest are dropped with their hits.
	FlushRetention int
	// Now is the clock (time.Now), for the cache's expiry only.
	Now func() time.Time
	// Rand is the source of generated codes and flush ids (crypto/rand.Reader).
	Rand io.Reader
	// Logger receives flush failures (slog.Default()).
	Logger *slog.Logger
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	if c.MaxURL <= 0 {
		c.MaxURL = DefaultMaxURL
	}
	if c.CacheSize <= 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.CachePolicy == "" {
		c.CachePolicy = DefaultCachePolicy
	}
	if c.CacheTTL <= 0 {
		c.CacheTTL = DefaultCacheTTL
	}
	if c.MaxStale <= 0 {
		c.MaxStale = DefaultMaxStale
	}
	if c.CodeAttempts <= 0 {
		c.CodeAttempts = DefaultCodeAttempts
	}
	if c.MaxMine <= 0 {
		c.MaxMine = DefaultMaxMine
	}
	if c.MaxHitsPerCommand <= 0 {
		c.MaxHitsPerCommand = DefaultMaxHitsPerCommand
	}
	if c.MaxFlushBytes <= 0 {
		c.MaxFlushBytes = DefaultMaxFlushBytes
	}
	if c.MaxPendingVisits <= 0 {
		c.MaxPendingVisits = DefaultMaxPendingVisits
	}
	if c.FlushRetention <= 0 {
		c.FlushRetention = DefaultFlushRetention
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports a Config that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	if _, err := ParsePolicy(string(c.CachePolicy)); err != nil {
		return err
	}
	switch {
	case c.CacheTTL > MaxCacheTTL:
		return fmt.Errorf("link: cache TTL %v exceeds %v", c.CacheTTL, MaxCacheTTL)
	case c.MaxStale >= c.CacheTTL:
		return fmt.Errorf("link: max staleness %v is not below the cache TTL %v", c.MaxStale, c.CacheTTL)
	}
	return nil
}

// Service creates, reads and deletes short links and resolves them for
// redirects. It is safe for concurrent use.
type Service struct {
	r   state.Replicator
	cfg Config
	log *slog.Logger

	cache  *shardedCache[target] // code -> what a redirect needs
	visits *visitCounter         // visits counted since the last flush
	agents *agentMemo            // User-Agents classified lately

	flushMu sync.Mutex   // one Flush at a time
	retry   []visitBatch // commands of failed flushes, oldest first
}

// NewService returns a Service that replicates through r.
func NewService(r state.Replicator, cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cache, err := newShardedCache[target](cfg.CacheSize, cfg.CachePolicy, cfg.Now)
	if err != nil {
		return nil, err
	}
	return &Service{r: r, cfg: cfg, log: cfg.Logger, cache: cache, visits: newVisitCounter(cfg.MaxPendingVisits), agents: newAgentMemo()}, nil
}

// Config returns the configuration in force, defaults filled in.
func (s *Service) Config() Config { return s.cfg }

// Create stores a short link to url for user, with the lifecycle settings
// of opts. A non-empty code is used as is (errs.Conflict when taken); an
// empty one makes the Service generate a 7-character base62 code, trying
// CodeAttempts codes before giving up with errs.Conflict. A non-empty
// idempotencyKey makes a retry by the same user within the dedup window
// return the first result, also for generated codes (see derivedCode).
// Errors name the field: "url" (errs.Invalid, or errs.TooLarge past MaxURL,
// or a URL that loops back to this cluster's short links), "code",
// "idempotency key", "expires_at", "redirect_status", "tags"; a missing
// user is errs.Unauthorized.
func (s *Service) Create(ctx context.Context, user, url, code, idempotencyKey string, opts Options) (Link, error) {
	if user == "" {
		return Link{}, errs.New(errs.Unauthorized, "sign in to create links")
	}
	if err := s.checkTarget(url); err != nil {
		return Link{}, err
	}
	if err := wire.CheckIdempotencyKey(idempotencyKey); err != nil {
		return Link{}, err
	}
	set, err := opts.settings(s.cfg.Now())
	if err != nil {
		return Link{}, err
	}
	if code != "" {
		if err := CheckCode(code); err != nil {
			return Link{}, err
		}
		return s.create(ctx, Create{Code: code, CreatedBy: user, URL: url, Settings: set}, dedupKey(opCreate, user, idempotencyKey, 0))
	}
	for attempt := range s.cfg.CodeAttempts {
		c := Create{CreatedBy: user, URL: url, Settings: set}
		if idempotencyKey != "" {
			c.Code = derivedCode(user, idempotencyKey, attempt)
		} else {
			var err error
			if c.Code, err = randomCode(s.cfg.Rand); err != nil {
				return Link{}, err
			}
		}
		l, err := s.create(ctx, c, dedupKey(opCreate, user, idempotencyKey, attempt))
		if !errs.Is(err, errs.Conflict) {
			return l, err
		}
	}
	return Link{}, errs.New(errs.Conflict, "no free code found (tried %d); try again or choose a code", s.cfg.CodeAttempts)
}

func (s *Service) create(ctx context.Context, c Create, dedupKey string) (Link, error) {
	res, err := s.r.Propose(ctx, s.r.PartitionOf(c.Code), dedupKey, EncodeCreate(c))
	if err != nil {
		return Link{}, fmt.Errorf("link: create %q: %w", c.Code, err)
	}
	rec, err := decodeRecordResult(res)
	if err != nil {
		return Link{}, err
	}
	return s.linkNow(rec.link(c.Code)), nil
}

// Info returns the link with code, read linearizably; errs.NotFound when
// there is none (or the code is malformed). Hits lag redirects by up to the
// flush interval.
func (s *Service) Info(ctx context.Context, code string) (Link, error) {
	if !ValidCode(code) {
		return Link{}, errs.New(errs.NotFound, "link not found")
	}
	var l Link
	var found bool
	_, err := s.r.Read(ctx, s.r.PartitionOf(code), false, func(r state.Reader) error {
		var err error
		l, found, err = Get(r, code)
		return err
	})
	if err != nil {
		return Link{}, fmt.Errorf("link: read %q: %w", code, err)
	}
	if !found {
		return Link{}, errs.New(errs.NotFound, "link not found")
	}
	return s.linkNow(l), nil
}

// Delete removes the link with code if user created it or isAdmin:
// errs.NotFound when there is none, errs.Forbidden for anyone else. It stops
// redirecting at once on this node and within CacheTTL on every other.
func (s *Service) Delete(ctx context.Context, user string, isAdmin bool, code string) error {
	if user == "" {
		return errs.New(errs.Unauthorized, "sign in to delete links")
	}
	if !ValidCode(code) {
		return errs.New(errs.NotFound, "link not found")
	}
	res, err := s.r.Propose(ctx, s.r.PartitionOf(code), "", EncodeDelete(Delete{Code: code, User: user, Admin: isAdmin}))
	if err != nil {
		return fmt.Errorf("link: delete %q: %w", code, err)
	}
	s.cache.Delete(code)
	return decodeDeleteResult(res)
}

// Mine returns the links user created that match f, with their visit
// counts, newest first (ties by code), at most MaxMine. Links live in the
// partitions of their codes, so Mine reads every partition linearizably and
// concurrently, and merges their answers by created time.
func (s *Service) Mine(ctx context.Context, user string, f Filter) ([]Link, error) {
	if user == "" {
		return nil, errs.New(errs.Unauthorized, "sign in to list your links")
	}
	keep, err := f.matcher(s.cfg.Now())
	if err != nil {
		return nil, err
	}
	parts := s.r.Partitions()
	results := make([][]Link, len(parts))
	errList := make([]error, len(parts))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() {
			_, errList[i] = s.r.Read(ctx, p, false, func(r state.Reader) error {
				var err error
				results[i], err = OwnedBy(r, user, s.cfg.MaxMine, keep)
				return err
			})
			if errList[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	if err := firstError(errList); err != nil {
		return nil, fmt.Errorf("link: list links of %q: %w", user, err)
	}
	links := slices.Concat(results...)
	slices.SortFunc(links, func(a, b Link) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Code, b.Code)
	})
	if len(links) > s.cfg.MaxMine {
		links = links[:s.cfg.MaxMine]
	}
	for i := range links {
		links[i] = s.linkNow(links[i])
	}
	return links, nil
}

// firstError returns the first error not caused by the fan-out's own
// cancellation, or that one when it is all there is.
func firstError(list []error) error {
	var first error
	for _, err := range list {
		if err != nil && (first == nil || errors.Is(first, context.Canceled)) {
			first = err
		}
	}
	return first
}

// dedupKey returns the replication dedup key of a link command for a user's
// idempotency key and attempt: Tag, op, uvarint len(user), user, uvarint
// attempt, idempotencyKey; "" when idempotencyKey is empty. The tag keeps
// link retries apart from other domains' in the same partition, the length
// prefix keeps ("ab","c") apart from ("a","bc").
func dedupKey(op byte, user, idempotencyKey string, attempt int) string {
	return wire.NewDedupKey(idempotencyKey, Tag, op).String(user).Uvarint(uint64(attempt)).Raw(idempotencyKey).Done()
}

package kv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// Default limits.
const (
	DefaultMaxKey    = 1 << 10 // bytes
	DefaultMaxValue  = 1 << 20 // bytes
	DefaultMaxList   = 1000    // keys per List call
	DefaultListLimit = 100     // keys per List call when the caller gives no limit
)

// Limits bounds what callers may store and ask for. Zero fields take the
// defaults.
type Limits struct {
	MaxKey   int // longest key, in bytes (1 KiB)
	MaxValue int // longest value, in bytes (1 MiB)
	MaxList  int // most keys one List call returns (1000)
	// History is how many versions of each key are kept (--kv-history,
	// DefaultHistory, at most MaxHistory). The proposer stamps it into
	// every write, so replicas agree whatever their own flags say.
	History int
	// MaxTxnOps bounds the comparisons and the operations of each branch
	// of a transaction (DefaultMaxTxnOps).
	MaxTxnOps int
}

// DefaultMaxTxnOps is Limits.MaxTxnOps's default.
const DefaultMaxTxnOps = 128

func (l Limits) withDefaults() Limits {
	if l.MaxKey <= 0 {
		l.MaxKey = DefaultMaxKey
	}
	if l.MaxValue <= 0 {
		l.MaxValue = DefaultMaxValue
	}
	if l.MaxList <= 0 {
		l.MaxList = DefaultMaxList
	}
	if l.History <= 0 {
		l.History = DefaultHistory
	}
	l.History = min(l.History, MaxHistory)
	if l.MaxTxnOps <= 0 {
		l.MaxTxnOps = DefaultMaxTxnOps
	}
	return l
}

// Service turns kv API calls into proposals and reads. It is safe for
// concurrent use.
type Service struct {
	r   state.Replicator
	lim Limits
	// grants picks the home partition of each new lease, in turn.
	grants atomic.Uint64
}

// NewService returns a Service that replicates through r within lim.
func NewService(r state.Replicator, lim Limits) *Service {
	return &Service{r: r, lim: lim.withDefaults()}
}

// Limits returns the limits in force, defaults filled in.
func (s *Service) Limits() Limits { return s.lim }

// Put stores value under key for user and returns the key's new version.
// ifVersion != 0 makes it a compare-and-swap (errs.PreconditionFailed when the
// current version differs). A non-empty idempotencyKey makes a retry by the
// same user within the dedup window return the first result.
func (s *Service) Put(ctx context.Context, user, key string, value []byte, ifVersion uint64, idempotencyKey string) (uint64, error) {
	w, err := s.PutWith(ctx, user, key, value, PutOptions{IfVersion: ifVersion, IdempotencyKey: idempotencyKey})
	return w.Version, err
}

// Create is Put that applies only when key does not exist yet
// (errs.PreconditionFailed otherwise); the new version is always 1.
func (s *Service) Create(ctx context.Context, user, key string, value []byte, idempotencyKey string) (uint64, error) {
	w, err := s.PutWith(ctx, user, key, value, PutOptions{IfAbsent: true, IdempotencyKey: idempotencyKey})
	return w.Version, err
}

// PutOptions are the conditions and lifetime of a put.
type PutOptions struct {
	IfVersion uint64 // compare-and-swap: apply only at this version
	IfAbsent  bool   // create: apply only when the key is missing
	// TTL makes the key expire after it, by the leader's clock; Lease
	// attaches it to a lease instead. They exclude each other.
	TTL            time.Duration
	Lease          uint64
	IdempotencyKey string
}

// Written is the outcome of a write: the key's new (put) or removed
// (delete) version and the revision of its partition that made it.
type Written struct {
	Version  uint64
	Revision uint64
}

// MinTTL and MaxTTL bound the TTL of a put and of a lease.
const (
	MinTTL = time.Second
	MaxTTL = 365 * 24 * time.Hour
)

// CheckTTL checks a TTL of a put or lease against MinTTL and MaxTTL.
func CheckTTL(ttl time.Duration) error {
	if ttl < MinTTL || ttl > MaxTTL {
		return errs.New(errs.Invalid, "ttl must be between %v and %v, got %v", MinTTL, MaxTTL, ttl)
	}
	return nil
}

// PutWith stores value under key for user with opt, attaching it first to
// opt.Lease in the lease's home partition when it has one.
func (s *Service) PutWith(ctx context.Context, user, key string, value []byte, opt PutOptions) (Written, error) {
	p := Put{Key: key, Value: value, IfVersion: opt.IfVersion, IfAbsent: opt.IfAbsent, Keep: uint64(s.lim.History)}
	if err := s.checkPut(key, value, opt.TTL, opt.Lease); err != nil {
		return Written{}, err
	}
	if opt.IfAbsent && opt.IfVersion != 0 {
		return Written{}, errs.New(errs.Invalid, "a put cannot both create and compare a version")
	}
	if opt.TTL > 0 {
		p.TTLMs = uint64(opt.TTL.Milliseconds())
	}
	dk, err := dedupKeyFor(user, opt.IdempotencyKey)
	if err != nil {
		return Written{}, err
	}
	part := s.partitionOf(key)
	if opt.Lease != 0 {
		if p.LeaseDeadlineMs, err = s.attach(ctx, opt.Lease, part); err != nil {
			return Written{}, err
		}
		p.Lease = opt.Lease
	}
	res, err := s.r.Propose(ctx, part, dk, EncodePut(p))
	if err != nil {
		return Written{}, fmt.Errorf("kv: put %q: %w", key, err)
	}
	v, rev, err := DecodeWriteResult(res)
	return Written{Version: v, Revision: rev}, err
}

// checkPut validates a put's key, value and lifetime.
func (s *Service) checkPut(key string, value []byte, ttl time.Duration, lease uint64) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	if len(value) > s.lim.MaxValue {
		return errs.New(errs.TooLarge, "value is %d bytes; the limit is %d", len(value), s.lim.MaxValue)
	}
	if ttl != 0 {
		if lease != 0 {
			return errs.New(errs.Invalid, "a key takes a ttl or a lease, not both")
		}
		return CheckTTL(ttl)
	}
	return nil
}

// partitionOf is the partition of a kv key: by its hash tag (RoutingKey).
func (s *Service) partitionOf(key string) uint64 { return s.r.PartitionOf(RoutingKey(key)) }

// PartitionOf returns the partition that holds key.
func (s *Service) PartitionOf(key string) uint64 { return s.partitionOf(key) }

// Delete removes key for user. ifVersion != 0 makes it conditional
// (errs.PreconditionFailed when the current version differs); a missing key
// is errs.NotFound. idempotencyKey works as for Put.
func (s *Service) Delete(ctx context.Context, user, key string, ifVersion uint64, idempotencyKey string) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	dk, err := dedupKeyFor(user, idempotencyKey)
	if err != nil {
		return err
	}
	res, err := s.r.Propose(ctx, s.partitionOf(key), dk, EncodeDelete(Delete{Key: key, IfVersion: ifVersion, Keep: uint64(s.lim.History)}))
	if err != nil {
		return fmt.Errorf("kv: delete %q: %w", key, err)
	}
	_, err = DecodeResult(res)
	return err
}

// Get reads key: linearizable unless stale, when staleMs says how stale the
// answer may be. A missing key is errs.NotFound.
func (s *Service) Get(ctx context.Context, key string, stale bool) (item Item, staleMs int64, err error) {
	if err := s.checkKey(key); err != nil {
		return Item{}, 0, err
	}
	var found bool
	staleMs, err = s.r.Read(ctx, s.partitionOf(key), stale, func(r state.Reader) error {
		var err error
		item, found, err = Get(r, key)
		return err
	})
	if err != nil {
		return Item{}, 0, fmt.Errorf("kv: get %q: %w", key, err)
	}
	if !found {
		return Item{}, staleMs, errs.New(errs.NotFound, "key not found")
	}
	return item, staleMs, nil
}

// List returns up to limit keys starting with prefix and sorting after after,
// merged from every partition in ascending byte order. limit 0 means
// DefaultListLimit; above Limits.MaxList it is errs.Invalid. Every partition is
// read concurrently; staleMs is the largest staleness among them.
func (s *Service) List(ctx context.Context, prefix, after string, limit int, stale bool) (items []ListItem, staleMs int64, err error) {
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > s.lim.MaxList:
		return nil, 0, errs.New(errs.Invalid, "limit must be between 1 and %d", s.lim.MaxList)
	}
	if len(prefix) > s.lim.MaxKey {
		return nil, 0, errs.New(errs.TooLarge, "prefix is %d bytes; the limit is %d", len(prefix), s.lim.MaxKey)
	}
	if len(after) > s.lim.MaxKey {
		return nil, 0, errs.New(errs.TooLarge, "after is %d bytes; the limit is %d", len(after), s.lim.MaxKey)
	}
	parts := s.r.Partitions()
	results := make([]partResult, len(parts))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() {
			res := &results[i]
			res.staleMs, res.err = s.r.Read(ctx, p, stale, func(r state.Reader) error {
				var err error
				res.items, err = List(r, prefix, after, limit)
				return err
			})
			if res.err != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	return mergeResults(results, limit)
}

// partResult is one partition's answer to a List.
type partResult struct {
	items   []ListItem
	staleMs int64
	err     error
}

// mergeResults merges the partitions' sorted answers and cuts at limit. It
// reports the first failure not caused by its own cancellation.
func mergeResults(results []partResult, limit int) ([]ListItem, int64, error) {
	var firstErr error
	var staleMs int64
	n := 0
	for _, r := range results {
		if r.err != nil && (firstErr == nil || errors.Is(firstErr, context.Canceled)) {
			firstErr = r.err
		}
		staleMs = max(staleMs, r.staleMs)
		n += len(r.items)
	}
	if firstErr != nil {
		return nil, 0, fmt.Errorf("kv: list: %w", firstErr)
	}
	items := make([]ListItem, 0, n)
	for _, r := range results {
		items = append(items, r.items...)
	}
	slices.SortFunc(items, func(a, b ListItem) int { return strings.Compare(a.Key, b.Key) })
	if len(items) > limit {
		items = items[:limit]
	}
	return items, staleMs, nil
}

// checkKey validates a key against the limits.
func (s *Service) checkKey(key string) error {
	switch {
	case key == "":
		return errs.New(errs.Invalid, "key is empty")
	case len(key) > s.lim.MaxKey:
		return errs.New(errs.TooLarge, "key is %d bytes; the limit is %d", len(key), s.lim.MaxKey)
	case !utf8.ValidString(key):
		return errs.New(errs.Invalid, "key is not valid UTF-8")
	}
	return nil
}

// DedupKey returns the replication dedup key for a user's idempotency key:
// Tag, uvarint len(user), user, idempotencyKey; "" when idempotencyKey is
// empty. The tag keeps kv retries apart from other domains' in the same
// partition, the length prefix keeps ("ab","c") apart from ("a","bc").
func DedupKey(user, idempotencyKey string) string {
	return wire.NewDedupKey(idempotencyKey, Tag).String(user).Raw(idempotencyKey).Done()
}

func dedupKeyFor(user, idempotencyKey string) (string, error) {
	if err := wire.CheckIdempotencyKey(idempotencyKey); err != nil {
		return "", err
	}
	return DedupKey(user, idempotencyKey), nil
}

package kv

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// Grant creates a lease of ttl in one of the partitions, taken in turn, and
// returns it.
func (s *Service) Grant(ctx context.Context, ttl time.Duration) (LeaseInfo, error) {
	if err := CheckTTL(ttl); err != nil {
		return LeaseInfo{}, err
	}
	parts := s.r.Partitions()
	p := parts[int(s.grants.Add(1)%uint64(len(parts)))]
	res, err := s.r.Propose(ctx, p, "", EncodeGrant(Grant{TTLMs: uint64(ttl.Milliseconds())}))
	if err != nil {
		return LeaseInfo{}, fmt.Errorf("kv: grant: %w", err)
	}
	return DecodeLeaseResult(res)
}

// leaseHome returns the home partition of lease id, errs.NotFound when the
// id cannot be one of this cluster's.
func (s *Service) leaseHome(id uint64) (uint64, error) {
	home := LeaseHome(id)
	if !slices.Contains(s.r.Partitions(), home) || id&(1<<LeaseShift-1) == 0 {
		return 0, errs.New(errs.NotFound, "lease %d not found", id)
	}
	return home, nil
}

// attach records in lease id's home that partition p has keys on it and
// returns the lease's deadline.
func (s *Service) attach(ctx context.Context, id, p uint64) (uint64, error) {
	home, err := s.leaseHome(id)
	if err != nil {
		return 0, err
	}
	res, err := s.r.Propose(ctx, home, "", EncodeAttach(Attach{Lease: id, Partition: p}))
	if err != nil {
		return 0, fmt.Errorf("kv: attach to lease %d: %w", id, err)
	}
	l, err := DecodeLeaseResult(res)
	return l.DeadlineMs, err
}

// KeepAlive renews lease id for its TTL and passes the new deadline on to
// every partition with keys attached. A failure to reach one of them is an
// error: the caller keeps the lease alive by calling again.
func (s *Service) KeepAlive(ctx context.Context, id uint64) (LeaseInfo, error) {
	home, err := s.leaseHome(id)
	if err != nil {
		return LeaseInfo{}, err
	}
	res, err := s.r.Propose(ctx, home, "", EncodeKeepAlive(KeepAlive{Lease: id}))
	if err != nil {
		return LeaseInfo{}, fmt.Errorf("kv: keep lease %d alive: %w", id, err)
	}
	l, err := DecodeLeaseResult(res)
	if err != nil {
		return l, err
	}
	for _, p := range l.Partitions {
		if _, err := s.r.Propose(ctx, p, "", EncodeExtend(Extend{Lease: id, DeadlineMs: l.DeadlineMs})); err != nil {
			return l, fmt.Errorf("kv: keep lease %d alive in partition %d: %w", id, p, err)
		}
	}
	return l, nil
}

// Revoke ends lease id: every key attached to it is deleted (a delete
// event each). When a partition cannot be reached the call fails and may
// be repeated; the keys there go at the lease's deadline at the latest.
func (s *Service) Revoke(ctx context.Context, id uint64) error {
	home, err := s.leaseHome(id)
	if err != nil {
		return err
	}
	keep := uint64(s.lim.History)
	res, err := s.r.Propose(ctx, home, "", EncodeRevoke(Revoke{Lease: id, Keep: keep}))
	if err != nil {
		return fmt.Errorf("kv: revoke lease %d: %w", id, err)
	}
	l, err := DecodeLeaseResult(res)
	if err != nil {
		return err
	}
	for _, p := range l.Partitions {
		if _, err := s.r.Propose(ctx, p, "", EncodeRevoke(Revoke{Lease: id, DeadlineMs: l.DeadlineMs, Keep: keep})); err != nil {
			return fmt.Errorf("kv: revoke lease %d in partition %d: %w", id, p, err)
		}
	}
	return nil
}

// Lease reads lease id (linearizable): its TTL and deadline; a lease
// unknown, revoked or expired is errs.NotFound.
func (s *Service) Lease(ctx context.Context, id uint64) (LeaseInfo, error) {
	home, err := s.leaseHome(id)
	if err != nil {
		return LeaseInfo{}, err
	}
	var l LeaseInfo
	var found bool
	_, err = s.r.Read(ctx, home, false, func(r state.Reader) error {
		var err error
		l, found, err = GetLease(r, id)
		return err
	})
	if err != nil {
		return LeaseInfo{}, fmt.Errorf("kv: read lease %d: %w", id, err)
	}
	if !found {
		return LeaseInfo{}, errs.New(errs.NotFound, "lease %d not found: it expired or was revoked", id)
	}
	return l, nil
}

// Expire proposes one expiry round to partition p (the caller leads it)
// and returns how many keys it deleted.
func (s *Service) Expire(ctx context.Context, p uint64) (int, error) {
	res, err := s.r.Propose(ctx, p, "", EncodeExpire(Expire{Keep: uint64(s.lim.History)}))
	if err != nil {
		return 0, fmt.Errorf("kv: expire in partition %d: %w", p, err)
	}
	n, err := DecodeResult(res)
	return int(n), err
}

// NextDue reads (stale, from this node's replica when it has one) the
// earliest time something expires in partition p; ok is false when
// nothing will.
func (s *Service) NextDue(ctx context.Context, p uint64) (ms int64, ok bool, err error) {
	_, err = s.r.Read(ctx, p, true, func(r state.Reader) error {
		ms, ok, err = NextDue(r)
		return err
	})
	return ms, ok, err
}

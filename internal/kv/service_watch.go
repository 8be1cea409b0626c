package kv

import (
	"strings"

	"github.com/parley-chat/parley/internal/errs"
)

// CheckMatch validates what a watch selects: a key, or a prefix (possibly
// empty: every key), not both.
func (s *Service) CheckMatch(m Match) error {
	switch {
	case m.Key != "" && m.Prefix != "":
		return errs.New(errs.Invalid, "watch a key or a prefix, not both")
	case m.Key != "":
		return s.checkKey(m.Key)
	case len(m.Prefix) > s.lim.MaxKey:
		return errs.New(errs.TooLarge, "prefix is %d bytes; the limit is %d", len(m.Prefix), s.lim.MaxKey)
	}
	return nil
}

// WatchPartitions returns the partitions whose events m may select: the
// key's, a prefix's when it holds a whole {tag} (every key under it shares
// the tag), else all of them.
func (s *Service) WatchPartitions(m Match) []uint64 {
	if m.Key != "" {
		return []uint64{s.partitionOf(m.Key)}
	}
	if open := strings.IndexByte(m.Prefix, '{'); open >= 0 && RoutingKey(m.Prefix) != m.Prefix {
		return []uint64{s.partitionOf(m.Prefix)}
	}
	return s.r.Partitions()
}

// WatchPlan checks a watch of m resumed from the token after ("" for now)
// and returns the partitions it follows and the positions it resumes
// from (a partition missing from them starts at its current revision).
func (s *Service) WatchPlan(m Match, after string) ([]uint64, map[uint64]uint64, error) {
	if err := s.CheckMatch(m); err != nil {
		return nil, nil, err
	}
	parts := s.WatchPartitions(m)
	pos, err := ParseToken(after)
	if err != nil {
		return nil, nil, err
	}
	pos, err = PlaceToken(pos, parts)
	return parts, pos, err
}

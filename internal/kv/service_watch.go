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

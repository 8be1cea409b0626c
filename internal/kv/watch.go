package kv

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/parley-chat/parley/internal/errs"
)

// Watcher receives a watch's output. Positions map each watched partition
// to the last revision whose events were all handed over: the watch's
// resume point (FormatToken).
type Watcher interface {
	// Ready is called once, with the starting positions.
	Ready(pos map[uint64]uint64) error
	// Events hands over events of partition p, whole revisions in revision
	// order, with the positions after them.
	Events(p uint64, events []Event, pos map[uint64]uint64) error
}

// A resume token is a watch's position: for each partition it follows, the
// last revision delivered, as "partition:revision" pairs in partition
// order joined by commas ("3:120,7:98"). Revisions are per partition, as
// in etcd (one revision counter per cluster there, per partition here): a
// prefix spans partitions, so its position is one revision per partition.
// A watch resumed with a token gets, per partition, every event after that
// revision. A single key's watch may give a bare revision ("120"), which
// stands for its partition.

// FormatToken returns the resume token of pos.
func FormatToken(pos map[uint64]uint64) string {
	parts := make([]uint64, 0, len(pos))
	for p := range pos {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d", p, pos[p])
	}
	return b.String()
}

// maxTokenParts bounds the pairs of a token (the most partitions there are).
const maxTokenParts = 4096

// ParseToken reads a resume token. A bare revision is returned under
// partition 0, for the caller to place (the partition of a key's watch).
// Errors are errs.Invalid naming the problem.
func ParseToken(s string) (map[uint64]uint64, error) {
	pos := map[uint64]uint64{}
	if s == "" {
		return pos, nil
	}
	if rev, err := strconv.ParseUint(s, 10, 64); err == nil {
		pos[0] = rev
		return pos, nil
	}
	pairs := strings.Split(s, ",")
	if len(pairs) > maxTokenParts {
		return nil, errs.New(errs.Invalid, "after has %d pairs; at most %d", len(pairs), maxTokenParts)
	}
	for _, pair := range pairs {
		ps, rs, ok := strings.Cut(pair, ":")
		p, err1 := strconv.ParseUint(ps, 10, 64)
		rev, err2 := strconv.ParseUint(rs, 10, 64)
		if !ok || err1 != nil || err2 != nil || p == 0 {
			return nil, errs.New(errs.Invalid, `after must be a revision or partition:revision pairs like "3:120,7:98", got %q`, clip(pair))
		}
		if _, dup := pos[p]; dup {
			return nil, errs.New(errs.Invalid, "after names partition %d twice", p)
		}
		pos[p] = rev
	}
	return pos, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// PlaceToken fits a parsed token to the partitions a watch follows: a bare
// revision goes to the single partition of a key's watch; a partition the
// watch does not follow is errs.Invalid.
func PlaceToken(pos map[uint64]uint64, parts []uint64) (map[uint64]uint64, error) {
	if rev, bare := pos[0]; bare {
		if len(parts) != 1 {
			return nil, errs.New(errs.Invalid, "a bare revision resumes a watch of one partition; this one follows %d: give partition:revision pairs", len(parts))
		}
		return map[uint64]uint64{parts[0]: rev}, nil
	}
	for p := range pos {
		if !slices.Contains(parts, p) {
			return nil, errs.New(errs.Invalid, "after names partition %d, which this watch does not follow", p)
		}
	}
	return pos, nil
}

package search

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/compat"
	"github.com/parley-chat/parley/internal/errs"
)

// Protocol is the internal protocol every node must speak before a search
// fans out: the search call is new since protocol 2 (DESIGN.md,
// "Upgrades").
const Protocol = 2

// Method is the internal call method of one partition's part of a search.
const Method = "search.partition"

// callTimeout bounds one partition's answer.
const callTimeout = 5 * time.Second

// PartitionRequest is the body of the search.partition call.
type PartitionRequest struct {
	Partition uint64 `json:"p"`
	User      string `json:"user"`
	Spec      Spec   `json:"spec"`
}

// Remote asks the node at addr for its part of a search (the
// search.partition call); it returns that node's SearchLocal answer or
// error.
type Remote func(ctx context.Context, addr string, req PartitionRequest) ([]Result, error)

// SearcherConfig is what a Searcher needs from the node it runs on.
type SearcherConfig struct {
	// Local is this node's indexes.
	Local *Indexes
	// Partitions returns every partition id.
	Partitions func() []uint64
	// ReplicaAddrs returns the internal addresses of a partition's
	// replicas; Self is this node's.
	ReplicaAddrs func(p uint64) []string
	Self         string
	// Remote makes the search.partition call.
	Remote Remote
	// ClusterProtocol is the protocol the whole cluster speaks (nil: this
	// build's).
	ClusterProtocol func() int
}

// Searcher answers searches: each partition's part from one replica that
// has its index ready (this node's when it holds one), merged by score.
type Searcher struct {
	cfg SearcherConfig
}

// NewSearcher returns a searcher.
func NewSearcher(cfg SearcherConfig) *Searcher { return &Searcher{cfg: cfg} }

// Request is a search as the HTTP API receives it.
type Request struct {
	Q, Room, From string
	// Before and After bound the message time: Unix ms or RFC 3339, ""
	// for none.
	Before, After string
	// Limit is the most results, 0 for DefaultLimit.
	Limit int
}

// Page is a search's answer: the results, best first.
type Page struct {
	Results []Result `json:"results"`
}

// Search parses req and answers it for user.
func (s *Searcher) Search(ctx context.Context, user string, req Request) (Page, error) {
	spec, err := ParseRequest(req)
	if err != nil {
		return Page{}, err
	}
	if err := compat.Require(s.cfg.ClusterProtocol, Protocol, "searches"); err != nil {
		return Page{}, err
	}
	parts := s.cfg.Partitions()
	answers := make([][]Result, len(parts))
	errsOf := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errsOf[i] = s.partition(ctx, p, user, spec)
		}()
	}
	wg.Wait()
	if err := errors.Join(errsOf...); err != nil {
		return Page{}, errs.Wrap(errs.Unavailable, err, "some partitions could not be searched; retry")
	}
	return Page{Results: Merge(answers, spec.Limit)}, nil
}

// partition asks for p's part: this node's index when it has one ready,
// else each replica node in turn.
func (s *Searcher) partition(ctx context.Context, p uint64, user string, spec Spec) ([]Result, error) {
	res, err := s.cfg.Local.SearchLocal(ctx, p, user, spec)
	if err == nil {
		return res, nil
	}
	last := err
	for _, addr := range s.cfg.ReplicaAddrs(p) {
		if addr == s.cfg.Self {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := s.cfg.Remote(cctx, addr, PartitionRequest{Partition: p, User: user, Spec: spec})
		cancel()
		if err == nil {
			return res, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

// Merge returns the best limit results of the partitions' answers: by
// score, then newest first, then by room and seq.
func Merge(answers [][]Result, limit int) []Result {
	var all []Result
	for _, a := range answers {
		all = append(all, a...)
	}
	slices.SortFunc(all, func(a, b Result) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Message.Ts, a.Message.Ts); c != 0 {
			return c
		}
		if c := strings.Compare(a.Room, b.Room); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	if len(all) > limit {
		all = all[:limit]
	}
	if all == nil {
		all = []Result{}
	}
	return all
}

// ParseRequest validates req into a Spec: the query parsed (Parse), the
// room= and from= filters merged, the times read and the limit checked.
// Everything wrong is errs.Invalid naming the parameter.
func ParseRequest(req Request) (Spec, error) {
	q, err := Parse(req.Q)
	if err != nil {
		return Spec{}, err
	}
	if err := q.Merge(req.Room, req.From); err != nil {
		return Spec{}, err
	}
	if q.Empty() {
		return Spec{}, errs.New(errs.Invalid, "q must name at least one word, phrase, from: or in:")
	}
	spec := Spec{Query: q, Limit: req.Limit}
	switch {
	case spec.Limit == 0:
		spec.Limit = DefaultLimit
	case spec.Limit < 0 || spec.Limit > MaxLimit:
		return Spec{}, errs.New(errs.Invalid, "limit must be between 1 and %d", MaxLimit)
	}
	if spec.Before, err = parseTime("before", req.Before); err != nil {
		return Spec{}, err
	}
	if spec.After, err = parseTime("after", req.After); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

// parseTime reads a time parameter: Unix ms or RFC 3339; 0 when empty.
func parseTime(name, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil || t.UnixMilli() <= 0 {
		return 0, errs.New(errs.Invalid, "%s must be a time: Unix milliseconds or RFC 3339, got %q", name, clip(v))
	}
	return t.UnixMilli(), nil
}

// clip shortens a value quoted in an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

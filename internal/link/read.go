package link

import (
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// Link is a stored short link.
type Link struct {
	Code      string
	URL       string
	CreatedBy string
	CreatedAt time.Time
	// Hits counts redirects flushed so far; it lags the redirects by up to
	// the flush interval.
	Hits uint64
}

func (r record) link(code string) Link {
	return Link{Code: code, URL: r.url, CreatedBy: r.createdBy, CreatedAt: time.UnixMilli(r.createdMs), Hits: r.hits}
}

// Get reads the link with code from a partition's state. found is false when
// it does not exist; an error means the state could not be read or is
// corrupt.
func Get(r state.Reader, code string) (l Link, found bool, err error) {
	rec, found, err := r.Get(linkKey(code))
	if err != nil || !found {
		return Link{}, false, err
	}
	rc, err := decodeRecord(rec)
	if err != nil {
		return Link{}, false, err
	}
	return rc.link(code), true, nil
}

// OwnedBy returns the links of a partition created by owner (any case),
// newest first, at most limit of them (no cap when limit <= 0).
func OwnedBy(r state.Reader, owner string, limit int) ([]Link, error) {
	lo := ownerPrefix(ident.Fold(owner))
	hi := state.PrefixEnd(lo)
	var codes []string
	err := r.Scan(lo, hi, func(k, _ []byte) bool {
		if len(k) > len(lo)+8 {
			codes = append(codes, string(k[len(lo)+8:]))
		}
		return limit <= 0 || len(codes) < limit
	})
	if err != nil {
		return nil, fmt.Errorf("link: scan links of %q: %w", owner, err)
	}
	links := make([]Link, 0, len(codes))
	for _, code := range codes {
		l, found, err := Get(r, code)
		if err != nil {
			return nil, err
		}
		if found {
			links = append(links, l)
		}
	}
	return links, nil
}

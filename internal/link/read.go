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
	// Hits counts visits (redirects served, bots included) flushed so far;
	// it lags the redirects by up to the flush interval. Bots counts those
	// flagged as bots.
	Hits, Bots uint64
	// ExpiresAt is when the link stops redirecting; zero: never.
	ExpiresAt time.Time
	// MaxVisits is the visits after which it stops; 0: no limit.
	MaxVisits uint64
	// Status is the redirect's HTTP status: 301, 302, 307 or 308.
	Status int
	// Disabled links do not redirect until enabled again.
	Disabled bool
	// Tags are the link's tags, folded and sorted.
	Tags []string
	// State is StateAt the time the Service read the link.
	State string
}

// StateAt says whether the link redirects at now: StateActive, or why not
// (StateDisabled, StateExpired, StateExhausted).
func (l Link) StateAt(now time.Time) string {
	s := settings{maxVisits: l.MaxVisits, disabled: l.Disabled}
	if !l.ExpiresAt.IsZero() {
		s.expiresMs = l.ExpiresAt.UnixMilli()
	}
	return stateOf(&s, l.Hits, now.UnixMilli())
}

func (r record) link(code string) Link {
	l := Link{
		Code: code, URL: r.url, CreatedBy: r.createdBy, CreatedAt: time.UnixMilli(r.createdMs),
		Hits: r.hits, Bots: r.bots, MaxVisits: r.maxVisits, Status: int(r.status), Disabled: r.disabled, Tags: r.tags,
	}
	if r.expiresMs != 0 {
		l.ExpiresAt = time.UnixMilli(r.expiresMs)
	}
	return l
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

// OwnedBy returns the links of a partition created by owner (any case)
// that keep (all when keep is nil), newest first, at most limit of them (no
// cap when limit <= 0).
func OwnedBy(r state.Reader, owner string, limit int, keep func(Link) bool) ([]Link, error) {
	lo := ownerPrefix(ident.Fold(owner))
	hi := state.PrefixEnd(lo)
	var codes []string
	err := r.Scan(lo, hi, func(k, _ []byte) bool {
		if len(k) > len(lo)+8 {
			codes = append(codes, string(k[len(lo)+8:]))
		}
		return keep != nil || limit <= 0 || len(codes) < limit
	})
	if err != nil {
		return nil, fmt.Errorf("link: scan links of %q: %w", owner, err)
	}
	var links []Link
	for _, code := range codes {
		l, found, err := Get(r, code)
		if err != nil {
			return nil, err
		}
		if found && (keep == nil || keep(l)) {
			links = append(links, l)
			if limit > 0 && len(links) == limit {
				break
			}
		}
	}
	return links, nil
}

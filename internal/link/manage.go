package link

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// MaxStatsDays is the longest window of daily visits Stats returns.
const MaxStatsDays = 366

// checkTarget validates a long URL: CheckURL, and no loop back to this
// cluster's short links.
func (s *Service) checkTarget(url string) error {
	if err := CheckURL(url, s.cfg.MaxURL); err != nil {
		return err
	}
	var self, roots []string
	if s.cfg.SelfURLs != nil {
		self = s.cfg.SelfURLs()
	}
	if s.cfg.RootURL != "" {
		roots = append(roots, s.cfg.RootURL)
	}
	if s.cfg.SelfRoots != nil {
		roots = append(roots, s.cfg.SelfRoots()...)
	}
	return checkLoop(url, self, roots)
}

// Patch names the fields Update changes; nil fields keep their values.
type Patch struct {
	URL       *string
	ExpiresAt *time.Time // the zero time: never expires
	MaxVisits *uint64    // 0: no limit
	Status    *int       // 301, 302, 307 or 308
	Tags      *[]string
	Disabled  *bool
}

// command validates p and returns it as an Update of code by user.
func (s *Service) command(user, code string, p Patch) (Update, error) {
	u := Update{Code: code, User: user}
	if p.URL != nil {
		if err := s.checkTarget(*p.URL); err != nil {
			return u, err
		}
		u.Fields, u.URL = u.Fields|FieldURL, *p.URL
	}
	if p.ExpiresAt != nil {
		if err := checkExpiry(*p.ExpiresAt, s.cfg.Now()); err != nil {
			return u, err
		}
		u.Fields |= FieldExpires
		if !p.ExpiresAt.IsZero() {
			u.ExpiresMs = p.ExpiresAt.UnixMilli()
		}
	}
	if p.MaxVisits != nil {
		u.Fields, u.MaxVisits = u.Fields|FieldMaxVisits, *p.MaxVisits
	}
	if p.Status != nil {
		if err := CheckStatus(*p.Status); err != nil {
			return u, err
		}
		u.Fields, u.Status = u.Fields|FieldStatus, uint16(statusOr(uint16(*p.Status)))
	}
	if p.Tags != nil {
		tags, err := CheckTags(*p.Tags)
		if err != nil {
			return u, err
		}
		u.Fields, u.Tags = u.Fields|FieldTags, tags
	}
	if p.Disabled != nil {
		u.Fields, u.Disabled = u.Fields|FieldDisabled, *p.Disabled
	}
	if u.Fields == 0 {
		return u, errs.New(errs.Invalid, "nothing to change: name at least one of url, expires_at, max_visits, redirect_status, tags, disabled")
	}
	return u, nil
}

// Update changes the fields p names of the link with code, for its owner
// only (errs.Forbidden for anyone else, admins included; errs.NotFound when
// there is none), and returns the link as stored. The change takes effect
// at once on this node and within CacheTTL on every other. Errors name the
// field, as Create's do.
func (s *Service) Update(ctx context.Context, user, code string, p Patch) (Link, error) {
	if user == "" {
		return Link{}, errs.New(errs.Unauthorized, "sign in to change links")
	}
	if !ValidCode(code) {
		return Link{}, errs.New(errs.NotFound, "link not found")
	}
	u, err := s.command(user, code, p)
	if err != nil {
		return Link{}, err
	}
	res, err := s.r.Propose(ctx, s.r.PartitionOf(code), "", EncodeUpdate(u))
	if err != nil {
		return Link{}, fmt.Errorf("link: update %q: %w", code, err)
	}
	s.cache.Delete(code)
	rec, err := decodeRecordResult(res)
	if err != nil {
		return Link{}, err
	}
	return s.linkNow(rec.link(code)), nil
}

// linkNow sets l's State by the Service's clock.
func (s *Service) linkNow(l Link) Link {
	l.State = l.StateAt(s.cfg.Now())
	return l
}

// Stats returns the visit statistics of the link with code, with the
// daily visits of the last days days (1 to MaxStatsDays, today by this
// node's clock included), read linearizably: for its owner or an admin
// (errs.Forbidden otherwise; errs.NotFound when there is none).
func (s *Service) Stats(ctx context.Context, user string, isAdmin bool, code string, days int) (Stats, error) {
	if user == "" {
		return Stats{}, errs.New(errs.Unauthorized, "sign in to see link stats")
	}
	if days < 1 || days > MaxStatsDays {
		return Stats{}, errs.New(errs.Invalid, "days must be 1 to %d, got %d", MaxStatsDays, days)
	}
	if !ValidCode(code) {
		return Stats{}, errs.New(errs.NotFound, "link not found")
	}
	today := dayOf(s.cfg.Now())
	from := today - min(today, uint32(days-1))
	var st Stats
	var found, allowed bool
	_, err := s.r.Read(ctx, s.r.PartitionOf(code), false, func(rd state.Reader) error {
		rec, ok, err := rd.Get(linkKey(code))
		if err != nil || !ok {
			return err
		}
		r, err := decodeRecord(rec)
		if err != nil {
			return err
		}
		found, allowed = true, isAdmin || ident.EqualFold(user, r.createdBy)
		if !allowed {
			return nil
		}
		st, err = readStats(rd, code, r, from, today)
		return err
	})
	switch {
	case err != nil:
		return Stats{}, fmt.Errorf("link: stats of %q: %w", code, err)
	case !found:
		return Stats{}, errs.New(errs.NotFound, "link not found")
	case !allowed:
		return Stats{}, errs.New(errs.Forbidden, "only the link's owner or an admin may see its stats")
	}
	return st, nil
}

// Filter selects links for Mine; zero fields select all.
type Filter struct {
	// Tag keeps links with this tag (in any case).
	Tag string
	// Query keeps links whose code or URL contains it, in any case.
	Query string
	// State keeps links in this state (StateActive, StateDisabled,
	// StateExpired, StateExhausted) at the time of the call.
	State string
}

// matcher validates f and returns the function that applies it at now;
// nil when f selects every link. Errors name the parameter.
func (f Filter) matcher(now time.Time) (func(Link) bool, error) {
	if f == (Filter{}) {
		return nil, nil
	}
	var tag string
	if f.Tag != "" {
		tags, err := CheckTags([]string{f.Tag})
		if err != nil {
			return nil, errs.New(errs.Invalid, "tag is not a valid tag (1 to %d bytes, no spaces, commas or control characters)", MaxTagLen)
		}
		tag = tags[0]
	}
	switch f.State {
	case "", StateActive, StateDisabled, StateExpired, StateExhausted:
	default:
		return nil, errs.New(errs.Invalid, "state must be active, disabled, expired or exhausted, not %q", f.State)
	}
	q := strings.ToLower(f.Query)
	return func(l Link) bool {
		if tag != "" && !containsTag(l.Tags, tag) {
			return false
		}
		if q != "" && !strings.Contains(strings.ToLower(l.Code), q) && !strings.Contains(strings.ToLower(l.URL), q) {
			return false
		}
		return f.State == "" || l.StateAt(now) == f.State
	}, nil
}

func containsTag(tags []string, tag string) bool { return slices.Contains(tags, tag) }

package link

import (
	"slices"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/text"
)

// DefaultStatus is the redirect status of a link that names none: 302
// Found, which browsers do not cache as permanent.
const DefaultStatus = 302

// Limits of tags.
const (
	MaxTags   = 10 // tags of one link
	MaxTagLen = 32 // bytes of one tag
)

// States of a link (Link.State): whether GET /s/{code} redirects, and why
// not.
const (
	StateActive    = "active"
	StateDisabled  = "disabled"
	StateExpired   = "expired"
	StateExhausted = "exhausted" // max_visits reached
)

// Options are the lifecycle settings a link may be created with.
type Options struct {
	// ExpiresAt is when the link stops redirecting; zero: never. It must
	// be in the future.
	ExpiresAt time.Time
	// MaxVisits is how many visits the link redirects before it stops
	// (approximately: see the package doc); 0: no limit.
	MaxVisits uint64
	// Status is the redirect status: 301, 302, 307 or 308; 0: 302.
	Status int
	// Tags label the link for filtering (at most MaxTags, each 1 to
	// MaxTagLen bytes, no spaces or commas); they are compared and stored
	// folded to lower case.
	Tags []string
}

// CheckStatus validates a redirect status: 0 (the default) or one of 301,
// 302, 307 and 308. Errors name the field "redirect_status".
func CheckStatus(s int) error {
	switch s {
	case 0, 301, 302, 307, 308:
		return nil
	}
	return errs.New(errs.Invalid, "redirect_status must be 301, 302, 307 or 308, not %d", s)
}

// CheckTags validates tags and returns them folded, sorted and without
// duplicates. Errors name the field "tags".
func CheckTags(tags []string) ([]string, error) {
	if len(tags) > MaxTags {
		return nil, errs.New(errs.Invalid, "tags: at most %d, got %d", MaxTags, len(tags))
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if t == "" || len(t) > MaxTagLen {
			return nil, errs.New(errs.Invalid, "tags: each must be 1 to %d bytes", MaxTagLen)
		}
		if err := text.Check(t, text.Line); err != nil {
			return nil, errs.New(errs.Invalid, "tags: %v", err)
		}
		for i := 0; i < len(t); i++ {
			if c := t[i]; c == ' ' || c == ',' || c == ';' {
				return nil, errs.New(errs.Invalid, "tags: %q has a space, comma or semicolon", t)
			}
		}
		out = append(out, ident.Fold(t))
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// checkExpiry validates an expiry against now: zero, or in the future.
// Errors name the field "expires_at".
func checkExpiry(at, now time.Time) error {
	if !at.IsZero() && !at.After(now) {
		return errs.New(errs.Invalid, "expires_at must be in the future (it is %s)", at.UTC().Format(time.RFC3339))
	}
	return nil
}

// settings validates o against now and returns it as a command carries it.
func (o Options) settings(now time.Time) (Settings, error) {
	if err := checkExpiry(o.ExpiresAt, now); err != nil {
		return Settings{}, err
	}
	if err := CheckStatus(o.Status); err != nil {
		return Settings{}, err
	}
	tags, err := CheckTags(o.Tags)
	if err != nil {
		return Settings{}, err
	}
	s := Settings{MaxVisits: o.MaxVisits, Status: uint16(o.Status), Tags: tags}
	if !o.ExpiresAt.IsZero() {
		s.ExpiresMs = o.ExpiresAt.UnixMilli()
	}
	return s, nil
}

// stateOf says whether a link with these settings and visits redirects at
// nowMs, and why not.
func stateOf(s *settings, visits uint64, nowMs int64) string {
	switch {
	case s.disabled:
		return StateDisabled
	case s.expiresMs != 0 && nowMs >= s.expiresMs:
		return StateExpired
	case s.maxVisits != 0 && visits >= s.maxVisits:
		return StateExhausted
	}
	return StateActive
}

package audit

import (
	"strings"
	"time"
)

// Limits of a Filter.
const (
	// DefaultLimit is how many events a query without a limit returns.
	DefaultLimit = 100
	// MaxLimit is the most events one query returns.
	MaxLimit = 1000
)

// Filter selects events. Its zero value selects the newest DefaultLimit
// events of every kind.
type Filter struct {
	// Kind, when set, keeps events of that kind only.
	Kind string `json:"kind,omitempty"`
	// Actor, when set, keeps events of that actor only, ignoring case (user
	// names ignore case).
	Actor string `json:"actor,omitempty"`
	// Since, when set, keeps events recorded at or after it.
	Since time.Time `json:"since,omitzero"`
	// Limit is how many of the newest matching events to keep: 0 means
	// DefaultLimit, more than MaxLimit means MaxLimit.
	Limit int `json:"limit,omitempty"`
}

// Normalized returns f with Limit within [1, MaxLimit].
func (f Filter) Normalized() Filter {
	switch {
	case f.Limit <= 0:
		f.Limit = DefaultLimit
	case f.Limit > MaxLimit:
		f.Limit = MaxLimit
	}
	return f
}

// Match reports whether e passes f (whatever its Limit).
func (f Filter) Match(e Event) bool {
	return (f.Kind == "" || e.Kind == f.Kind) &&
		(f.Actor == "" || strings.EqualFold(e.Actor, f.Actor)) &&
		(f.Since.IsZero() || !e.Time.Before(f.Since))
}
